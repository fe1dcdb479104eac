// BookKeeper's own RocksDB storage class (KeyValueStorageRocksDB, with the options DbLedgerStorage opens its
// `locations` and `ledgers` databases with) writing and reading a database, for the test that our RocksDB binding
// and BookKeeper's rocksdbjni open each other's databases (tests/interop/test_db_storage_files.py).
//
//   write DIR NAME TYPE N   open DIR/NAME as TYPE (EntryLocation, LedgerMetadata), put N records in a batch
//                           (key: int64 i | int64 i * 3, value: int64 i * 7, big-endian), compact (SST files), close
//   dump DIR NAME TYPE      open it read-only and print "KEYHEX<TAB>VALUEHEX" per record, in key order, then the
//                           floor of key (i=N/2, MAX) as "floor<TAB>KEYHEX"
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Map;
import org.apache.bookkeeper.bookie.storage.ldb.KeyValueStorage;
import org.apache.bookkeeper.bookie.storage.ldb.KeyValueStorageFactory.DbConfigType;
import org.apache.bookkeeper.bookie.storage.ldb.KeyValueStorageRocksDB;
import org.apache.bookkeeper.conf.ServerConfiguration;

public class RocksDbTool {
    public static void main(String[] args) throws Exception {
        ServerConfiguration conf = new ServerConfiguration();
        conf.setProperty("dbStorage_rocksDB_blockCacheSize", 16L * 1024 * 1024);
        DbConfigType type = DbConfigType.valueOf(args[3]);
        HexFormat hex = HexFormat.of();
        if (args[0].equals("write")) {
            int n = Integer.parseInt(args[4]);
            KeyValueStorage db = new KeyValueStorageRocksDB(args[1], args[2], type, conf);
            try (KeyValueStorage.Batch batch = db.newBatch()) {
                for (long i = 0; i < n; i++) {
                    batch.put(ByteBuffer.allocate(16).putLong(i).putLong(i * 3).array(),
                            ByteBuffer.allocate(8).putLong(i * 7).array());
                }
                batch.flush();
            }
            db.compact();
            db.close();
        } else {
            KeyValueStorage db = new KeyValueStorageRocksDB(args[1], args[2], type, conf, true);
            long count = 0;
            try (KeyValueStorage.CloseableIterator<Map.Entry<byte[], byte[]>> it = db.iterator()) {
                while (it.hasNext()) {
                    Map.Entry<byte[], byte[]> e = it.next();
                    System.out.println(hex.formatHex(e.getKey()) + "\t" + hex.formatHex(e.getValue()));
                    count++;
                }
            }
            byte[] probe = ByteBuffer.allocate(16).putLong(count / 2).putLong(Long.MAX_VALUE).array();
            Map.Entry<byte[], byte[]> floor = db.getFloor(probe);
            System.out.println("floor\t" + (floor == null ? "" : hex.formatHex(floor.getKey())));
            db.close();
        }
    }
}
