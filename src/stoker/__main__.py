"""``python -m stoker`` runs the command line."""

from stoker.cli import main

main()
