from kai.cli.main import main

main()
