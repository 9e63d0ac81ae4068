/* kbpkg import on the kernel-builder fixture: --json report, and a kernel.yaml that checks. */
#include "kbtest.h"

#include <string.h>

Test(import_cli, cli_reports_what_is_not_carried_over)
{
    char *tmp = kbt_mkdtemp();
    char *project = kbt_data("kernel_builder/activation");
    char *dir = kbi_asprintf("%s/pkg", tmp);
    const char *args[] = {"import", project, dir, "--name", "acme/act", "--json", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"not_carried_over\"") && strstr(r.out, "PyTorch bindings"), "%s",
              r.out);
    kbt_run_free(&r);
    const char *check[] = {"manifest", "check", dir, NULL};
    r = kbt_kbpkg(NULL, check);
    cr_expect_eq(r.exit_code, 0, "the imported kernel.yaml checks: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "acme/act"), "%s", r.out);
    kbt_run_free(&r);
    free(dir);
    free(project);
    kbt_rmtree(tmp);
    free(tmp);
}
