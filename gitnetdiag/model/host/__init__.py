"""Host evidence as values: the host report and the pure parsers and lints it is built from."""
