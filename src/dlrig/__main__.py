from dlrig.cli import main

main()
