# Embeds a text file as a NUL-terminated C array: cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake
file(READ "${IN}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\nconst char ${NAME}[] = {${bytes} 0x00};\n")
