/* Compiles the public headers alone (C99, -pedantic -Werror): no internal header leaks. */
#include <kbpkg/kbpkg.h>
/* The kernel ABI header stands alone too: packages include it, not libkbpkg. */
#include <kbpkg/kernel_abi.h>

int kb_headertest_dummy(void);
int kb_headertest_dummy(void)
{
    return KB_OK;
}
