from bookie.server.main import main

main()
