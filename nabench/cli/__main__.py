"""`python -m nabench.cli ...`, the same as the `nabench` command."""

from nabench.cli.root import main

main()
