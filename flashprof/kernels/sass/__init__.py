"""Static build: what the compiler made of each variant, without a GPU or torch
(``static``: build and report; ``text``: reading ptxas logs and SASS; ``command``: the CLI)."""
