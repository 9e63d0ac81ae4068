/* fixture: tests/check.c */
