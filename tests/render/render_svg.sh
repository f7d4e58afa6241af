#!/usr/bin/env bash
# Renders an SVG in headless Chromium and prints how many of its pixels are
# painted (not white), as the page counts them on a canvas:
#   tests/render/render_svg.sh CHROMIUM FILE.svg     -> "painted N of M" or "not an image"
# The SVG is embedded as a data: URL, which leaves the canvas readable.
set -euo pipefail
chromium=$1
svg=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
    printf '<!doctype html><html><body><pre id="out">loading</pre><script>\n'
    printf 'const img = new Image();\n'
    printf 'img.onload = () => {\n'
    printf '  const c = document.createElement("canvas"); c.width = img.naturalWidth; c.height = img.naturalHeight;\n'
    printf '  const g = c.getContext("2d"); g.fillStyle = "white"; g.fillRect(0, 0, c.width, c.height); g.drawImage(img, 0, 0);\n'
    printf '  const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;\n'
    printf '  for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) ++n;\n'
    printf '  document.getElementById("out").textContent = "painted " + n + " of " + (c.width * c.height);\n'
    printf '};\n'
    printf 'img.onerror = () => { document.getElementById("out").textContent = "not an image"; };\n'
    printf 'img.src = "data:image/svg+xml;base64,%s";\n' "$(base64 -w0 "$svg")"
    printf '</script></body></html>\n'
} >"$work/page.html"
# Root needs --no-sandbox; the profile directory keeps runs apart.
"$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$work/profile" \
    --virtual-time-budget=10000 --dump-dom "file://$work/page.html" 2>/dev/null |
    grep -o 'painted [0-9]* of [0-9]*\|not an image\|loading' | head -1
