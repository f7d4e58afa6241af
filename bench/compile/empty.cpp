// Compile-time baseline: an empty translation unit (the compiler's start-up cost).
