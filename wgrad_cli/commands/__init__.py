"""What each CLI command does, one module per command (cli.py parses their options)."""
