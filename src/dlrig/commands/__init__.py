"""One module per command: parse options, call the core, hand the result to a renderer."""
