from gitnetdiag.cli import main

main()
