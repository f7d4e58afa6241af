# Runs the anatomy CLI once and checks its exit status and output.
#
#   cmake -DEXE=path/to/anatomy -DARGS="estimate|--model|gpt2" -DRC=2
#         [-DERR=regex] [-DOUT=regex] [-DPREFIX=name] -P run_cli.cmake
#
# ARGS separates the arguments with "|". On a non-zero status the run must
# print exactly one line on stderr, starting with PREFIX (default "anatomy")
# and ": ", and matching ERR, and nothing on stdout, except with --json, where
# stdout is the JSON error object with the same status. stdout must match OUT.
if(NOT DEFINED PREFIX)
    set(PREFIX anatomy)
endif()
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${EXE}" ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(shown "anatomy ${ARGS}\n--- status: ${rc}\n--- stdout:\n${out}\n--- stderr:\n${err}")
if(NOT rc STREQUAL "${RC}")
    message(FATAL_ERROR "expected exit status ${RC}\n${shown}")
endif()
if(NOT RC STREQUAL "0")
    if("|${ARGS}|" MATCHES "\\|--json\\|")
        if(NOT out MATCHES "^{\n  \"error\": \"${PREFIX}: [^\n]+\",\n  \"exit\": ${RC}\n}\n$")
            message(FATAL_ERROR "with --json an error must be {\"error\": ..., \"exit\": ${RC}} on stdout\n${shown}")
        endif()
    elseif(NOT out STREQUAL "")
        message(FATAL_ERROR "an error must print nothing on stdout\n${shown}")
    endif()
    if(NOT err MATCHES "^${PREFIX}: [^\n]+\n$")
        message(FATAL_ERROR "an error must be one line starting with \"${PREFIX}: \"\n${shown}")
    endif()
endif()
if(DEFINED ERR AND NOT err MATCHES "${ERR}")
    message(FATAL_ERROR "stderr does not match \"${ERR}\"\n${shown}")
endif()
if(DEFINED OUT AND NOT out MATCHES "${OUT}")
    message(FATAL_ERROR "stdout does not match \"${OUT}\"\n${shown}")
endif()
