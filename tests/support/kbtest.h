/* Helpers shared by the Criterion suites: temp folders, running the CLI, fixture paths. */
#ifndef KBTEST_H
#define KBTEST_H

#include <criterion/criterion.h>
#include <stdbool.h>

#include "core/internal.h"
#include "kbpkg/kbpkg.h"

/* A fresh temporary folder, removed by kbt_rmtree; the caller frees the string. */
char *kbt_mkdtemp(void);
void kbt_rmtree(const char *path);
/* $KB_TEST_DATA/<rel>, owned by the caller. */
char *kbt_data(const char *rel);
/* $KB_SOURCE_DIR/<rel>, owned by the caller. */
char *kbt_source(const char *rel);
/* Write a file (creating parent folders). */
void kbt_write(const char *path, const char *text);

/* Run the built kbpkg with argv (NULL-terminated, without "kbpkg"); stdout and
 * stderr are captured separately. env entries "K=V" are added for the child. */
typedef struct kbt_run {
    int exit_code;
    char *out;
    char *err;
} kbt_run;
kbt_run kbt_kbpkg(const char *const *env, const char *const *args);
/* The same with input (NULL: /dev/null) on the child's stdin. */
kbt_run kbt_kbpkg_input(const char *const *env, const char *const *args, const char *input);
/* The same on a pseudo-terminal of cols x 30 (TERM=xterm; NO_COLOR and COLUMNS unset before
 * env is added, so env may set them): out holds everything that reached the terminal, err is
 * NULL. With stdout_path, stdout goes to that file instead of the terminal. */
kbt_run kbt_kbpkg_pty(const char *const *env, const char *const *args, int cols,
                      const char *stdout_path);
void kbt_run_free(kbt_run *r);

/* Skip a test because a tool or package it needs is missing (printf-style message, a string
 * literal first). Under KBPKG_REQUIRE_DEPS=1, which .ci/run sets, the test fails instead: in CI
 * scripts/install-deps.sh installed everything, so a suite that skips there would show green
 * while testing nothing. What CI cannot have (a GPU or its driver, nvcc, another architecture,
 * root for a tmpfs mount) stays a plain cr_skip. */
#define kbt_skip_missing(...)                                                                      \
    do {                                                                                           \
        if (kbt_deps_required())                                                                   \
            cr_assert_fail("KBPKG_REQUIRE_DEPS=1, a dependency is missing: " __VA_ARGS__);         \
        cr_skip_test(__VA_ARGS__);                                                                 \
    } while (0)
/* true when KBPKG_REQUIRE_DEPS=1: missing dependencies fail tests instead of skipping them. */
bool kbt_deps_required(void);

/* A ctx with no callbacks and no config files. */
kb_ctx *kbt_ctx(void);

#endif
