import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LastConfirmedAndEntry;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.client.api.WriteFlag;
import org.apache.bookkeeper.client.api.WriteHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;

/**
 * The Java client's operations that bk-oracle's bk-write/bk-read do not exercise, for tests/interop (compiled there
 * against the oracle's jars). Password "pw", CRC32C, E3 W2 A2. stdout is what the test checks.
 *
 *   tail ZK ROOT LEDGER COUNT           follow an open ledger with long-poll reads (READ with ENTRY_PIGGYBACK,
 *                                       previousLAC and a timeout: readLastAddConfirmedAndEntry) until COUNT
 *                                       entries came; one line "ENTRY_ID TEXT" per entry
 *   deferred ZK ROOT N                  N adds with WriteFlag.DEFERRED_SYNC, then force() (FORCE_LEDGER); prints
 *                                       "ledger ID lac LAC" after force, and keeps the ledger open
 *   explicit-lac ZK ROOT N SECONDS      N adds to a ledger whose handle sends WRITE_LAC every second
 *                                       (explicitLacInterval), prints "ledger ID" once they are acknowledged,
 *                                       then stays open SECONDS seconds (a reader meanwhile sees LAC N-1)
 *   read-explicit-lac ZK ROOT LEDGER    READ_LAC without recovery: prints the explicit LAC the bookies hold
 *   create ZK ROOT                      for each line "N open|close K=V..." of stdin: a ledger with custom
 *                                       metadata K=V (values UTF-8) as a Pulsar broker creates them, password
 *                                       empty, N entries, then closed or left open; prints one id per line
 *   write ZK ROOT N TEXT close|open...  a ledger per close|open word: N entries "TEXT-i" (i: the entry id), 100
 *                                       adds in flight, as bk-write --suffix-index writes one, then closed or
 *                                       left open; prints one id per line. One JVM for many ledgers: a JVM
 *                                       start is most of a bk-write's ~6 s
 *   read ZK ROOT recovery|no-recovery LEDGER...
 *                                       open each ledger (with recovery: fenced and closed) and read 0..LAC, as
 *                                       bk-read does; one line "LEDGER<TAB>ENTRY_ID<TAB>HEX" per entry
 */
public final class InteropClient {
    static final byte[] PASSWORD = "pw".getBytes(StandardCharsets.UTF_8);

    public static void main(String[] argv) throws Exception {
        String mode = argv[0];
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://" + argv[1] + argv[2]);
        conf.setZkTimeout(10000);
        conf.setAddEntryTimeout(30);
        conf.setReadEntryTimeout(30);
        if (mode.equals("explicit-lac")) {
            conf.setExplictLacInterval(1000); // sic: BookKeeper spells it so
        }
        try (BookKeeper bk = new BookKeeper(conf)) {
            switch (mode) {
                case "tail":
                    tail(bk, Long.parseLong(argv[3]), Integer.parseInt(argv[4]));
                    break;
                case "deferred":
                    deferred(bk, Integer.parseInt(argv[3]));
                    break;
                case "explicit-lac":
                    explicitLac(bk, Integer.parseInt(argv[3]), Integer.parseInt(argv[4]));
                    break;
                case "create":
                    java.io.BufferedReader in = new java.io.BufferedReader(
                            new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
                    for (String line = in.readLine(); line != null; line = in.readLine()) {
                        String[] words = line.trim().split(" ");
                        createWithMetadata(bk, Integer.parseInt(words[0]), words[1].equals("close"),
                                java.util.Arrays.copyOfRange(words, 2, words.length));
                    }
                    break;
                case "write":
                    for (int i = 5; i < argv.length; i++) {
                        System.out.println(write(bk, Integer.parseInt(argv[3]), argv[4], argv[i].equals("close")));
                    }
                    break;
                case "read":
                    for (int i = 4; i < argv.length; i++) {
                        read(bk, Long.parseLong(argv[i]), argv[3].equals("recovery"));
                    }
                    System.out.flush();
                    break;
                case "read-explicit-lac":
                    try (LedgerHandle lh = bk.openLedgerNoRecovery(Long.parseLong(argv[3]),
                            BookKeeper.DigestType.CRC32C, PASSWORD)) {
                        System.out.println(lh.readExplicitLastConfirmed());
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
        }
    }

    static void tail(BookKeeper bk, long ledgerId, int count) throws Exception {
        try (ReadHandle rh = bk.newOpenLedgerOp().withLedgerId(ledgerId).withDigestType(DigestType.CRC32C)
                .withPassword(PASSWORD).withRecovery(false).execute().get()) {
            long next = 0;
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (next < count && System.nanoTime() < deadline) {
                try (LastConfirmedAndEntry got = rh.readLastAddConfirmedAndEntry(next, 10_000, false)) {
                    if (got.hasEntry()) {
                        System.out.println(next + " "
                                + new String(got.getEntry().getEntryBytes(), StandardCharsets.UTF_8));
                        System.out.flush();
                        next++;
                    }
                }
            }
            if (next < count) {
                throw new IllegalStateException("only " + next + " of " + count + " entries came");
            }
        }
    }

    static WriteHandle create(BookKeeper bk, EnumSet<WriteFlag> flags) throws Exception {
        return bk.newCreateLedgerOp().withEnsembleSize(3).withWriteQuorumSize(2).withAckQuorumSize(2)
                .withDigestType(DigestType.CRC32C).withPassword(PASSWORD).withWriteFlags(flags).execute().get();
    }

    static void deferred(BookKeeper bk, int n) throws Exception {
        WriteHandle wh = create(bk, EnumSet.of(WriteFlag.DEFERRED_SYNC));
        for (int i = 0; i < n; i++) {
            wh.append(("deferred-" + i).getBytes(StandardCharsets.UTF_8));
        }
        wh.force().get();
        System.out.println("ledger " + wh.getId() + " lac " + wh.getLastAddConfirmed());
    }

    static void explicitLac(BookKeeper bk, int n, int seconds) throws Exception {
        WriteHandle wh = create(bk, EnumSet.noneOf(WriteFlag.class));
        for (int i = 0; i < n; i++) {
            wh.append(("entry-" + i).getBytes(StandardCharsets.UTF_8));
        }
        System.out.println("ledger " + wh.getId());
        System.out.flush();
        Thread.sleep(seconds * 1000L);
    }

    static long write(BookKeeper bk, int n, String text, boolean close) throws Exception {
        WriteHandle wh = create(bk, EnumSet.noneOf(WriteFlag.class));
        java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(100);
        java.util.List<java.util.concurrent.CompletableFuture<Long>> adds = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            inFlight.acquire();
            adds.add(wh.appendAsync((text + "-" + i).getBytes(StandardCharsets.UTF_8))
                    .whenComplete((id, error) -> inFlight.release()));
        }
        for (int i = 0; i < n; i++) {
            long id = adds.get(i).get();
            if (id != i) {
                throw new IllegalStateException("entry id " + id + " != " + i);
            }
        }
        if (close) {
            wh.close();
        }
        return wh.getId();
    }

    static void read(BookKeeper bk, long ledgerId, boolean recovery) throws Exception {
        try (ReadHandle rh = bk.newOpenLedgerOp().withLedgerId(ledgerId).withDigestType(DigestType.CRC32C)
                .withPassword(PASSWORD).withRecovery(recovery).execute().get()) {
            long lac = rh.getLastAddConfirmed();
            for (long first = 0; first <= lac; first += 1000) {
                try (org.apache.bookkeeper.client.api.LedgerEntries entries = rh.read(first,
                        Math.min(lac, first + 999))) {
                    for (org.apache.bookkeeper.client.api.LedgerEntry e : entries) {
                        byte[] bytes = e.getEntryBytes();
                        char[] hex = new char[bytes.length * 2];
                        for (int i = 0; i < bytes.length; i++) {
                            hex[2 * i] = Character.forDigit((bytes[i] >> 4) & 0xf, 16);
                            hex[2 * i + 1] = Character.forDigit(bytes[i] & 0xf, 16);
                        }
                        System.out.println(ledgerId + "\t" + e.getEntryId() + "\t" + new String(hex));
                    }
                }
            }
        }
    }

    static void createWithMetadata(BookKeeper bk, int n, boolean close, String[] pairs) throws Exception {
        java.util.Map<String, byte[]> metadata = new java.util.HashMap<>();
        for (String pair : pairs) {
            int eq = pair.indexOf('=');
            metadata.put(pair.substring(0, eq), pair.substring(eq + 1).getBytes(StandardCharsets.UTF_8));
        }
        WriteHandle wh = bk.newCreateLedgerOp().withEnsembleSize(3).withWriteQuorumSize(2).withAckQuorumSize(2)
                .withDigestType(DigestType.CRC32C).withPassword(new byte[0]).withCustomMetadata(metadata)
                .execute().get();
        for (int i = 0; i < n; i++) {
            wh.append(("pulsar-entry-" + i).getBytes(StandardCharsets.UTF_8));
        }
        if (close) {
            wh.close();
        }
        System.out.println(wh.getId());
        System.out.flush();
    }
}
