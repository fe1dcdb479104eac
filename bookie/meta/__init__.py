"""The metadata store on ZooKeeper (kazoo), laid out and serialized as Apache BookKeeper does."""
