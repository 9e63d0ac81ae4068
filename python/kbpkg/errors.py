"""kbpkg's Python exceptions (one module, so the binding's parts share them)."""


class Error(Exception):
    """A libkbpkg failure: code is the negative kb_err, message the ctx's sentence."""

    def __init__(self, code, message, path=None, url=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.url = url


class KernelError(Error):
    """A kernel export returned a non-zero status."""


class ArgumentError(Error, ValueError):
    """An argument does not fit the export's declared signature (names the argument and what
    was expected); code is KB_ERR_INVALID."""

    def __init__(self, message):
        super().__init__(-3, message)  # include/kbpkg/common.h: KB_ERR_INVALID
