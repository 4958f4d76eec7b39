"""Command-line entry points of the lower layers (``mtnlg quality``, ``tokenizer``, ``blend``,
``eval``): they sit on top so that ``curation``, ``blending`` and ``training`` hold no CLI."""
