from wgrad_cli.cli import main

main()
