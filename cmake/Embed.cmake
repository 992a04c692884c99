# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P Embed.cmake
# Writes OUT defining `const char NAME[]` (NUL-terminated) and
# `const unsigned long NAME_len` with the bytes of IN.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/Embed.cmake; do not edit. */\n"
  "const char ${NAME}[] = {\n  ${bytes}0x00};\n"
  "const unsigned long ${NAME}_len = ${len};\n")
