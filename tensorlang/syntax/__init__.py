"""Surface syntax: the AST with source spans and the Lark-based parser."""
