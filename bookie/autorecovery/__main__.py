from bookie.autorecovery.main import main

main()
