from vmemplan.cli import main

main()
