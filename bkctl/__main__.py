from bkctl.cli import main

main()
