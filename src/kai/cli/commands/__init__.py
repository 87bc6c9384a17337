"""One module per ``kai`` command (the component commands share one: they differ only in what they run);
``kai.cli.main`` registers them."""
