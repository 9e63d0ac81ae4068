# The kernel ABI header (include/kbpkg/kernel_abi.h) as bytes inside libkbpkg: the builder writes
# it into every package build and artifact, so the one header reaches packages even where kbpkg
# is installed without its sources.
set(KB_ABI_HEADER ${PROJECT_SOURCE_DIR}/include/kbpkg/kernel_abi.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KB_ABI_HEADER})
file(READ ${KB_ABI_HEADER} KB_ABI_HEX HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," KB_ABI_BYTES "${KB_ABI_HEX}")
string(LENGTH "${KB_ABI_HEX}" KB_ABI_HEX_LEN)
math(EXPR KB_ABI_LEN "${KB_ABI_HEX_LEN} / 2")
file(WRITE ${PROJECT_BINARY_DIR}/generated/kernel_abi_text.c.tmp
  "/* Generated from include/kbpkg/kernel_abi.h by cmake/embed_abi_header.cmake. */\n"
  "#include <stddef.h>\n"
  "extern const unsigned char kbi_kernel_abi_header[];\n"
  "extern const size_t kbi_kernel_abi_header_len;\n"
  "const unsigned char kbi_kernel_abi_header[] = {${KB_ABI_BYTES}};\n"
  "const size_t kbi_kernel_abi_header_len = ${KB_ABI_LEN};\n")
configure_file(${PROJECT_BINARY_DIR}/generated/kernel_abi_text.c.tmp
               ${PROJECT_BINARY_DIR}/generated/kernel_abi_text.c COPYONLY)
target_sources(kbmod_builder PRIVATE ${PROJECT_BINARY_DIR}/generated/kernel_abi_text.c)
