"""Third-party internals, one module per library: each checks the version and the names it
relies on and fails loudly when they are not what it was written for."""
