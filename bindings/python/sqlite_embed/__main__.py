"""python -m sqlite_embed: the sqlite-embed command."""
from sqlite_embed.cli import main

raise SystemExit(main())
