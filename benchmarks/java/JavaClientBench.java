import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.client.api.WriteHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;

/**
 * The Java client's side of benchmarks/vs_bookkeeper.py, measured the way `bkctl bench write/read` measures ours:
 * after a warm-up (JIT) of WARMUP entries to a ledger of its own, one timed phase, and the process's CPU-seconds
 * over that phase only (OperatingSystemMXBean, every thread: client, Netty, GC).
 *
 *   write   ZK ROOT N           N 1 KiB entries (E3 W2 A2, CRC32C, password "bkctl-bench"), at most WINDOW adds in
 *                               flight, no rate limit; then the ledger is deleted
 *   prepare ZK ROOT N           the same, untimed, and the ledger is kept (closed) for `read`: its id in the JSON
 *   paced   ZK ROOT N RATE      N entries at RATE/s, latency from each entry's due time (no coordinated omission)
 *   read    ZK ROOT N LEDGER    reads LEDGER 0..LAC in order, READ_CHUNK entries per read, READS_IN_FLIGHT at once
 *
 * stdout: "timed" when the timed phase starts, then one JSON object. Upstream's BenchThroughputLatency caps adds
 * at its `-throttle` per second (the client's RateLimiter; 0 blocks its semaphore) and waits out its `-time`
 * before it reports, hence this tool.
 */
public final class JavaClientBench {
    static final int WINDOW = 5000; // bkctl bench's --max-outstanding default
    static final int WARMUP = 20000;
    static final int READ_CHUNK = 256; // bkctl's reads in flight per range read
    static final int READS_IN_FLIGHT = 4;
    static final byte[] PASSWORD = "bkctl-bench".getBytes(StandardCharsets.UTF_8);

    public static void main(String[] argv) throws Exception {
        String mode = argv[0];
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://" + argv[1] + argv[2]);
        conf.setThrottleValue(0); // no client-side rate limit
        conf.setAddEntryTimeout(60);
        conf.setReadEntryTimeout(60);
        int n = Integer.parseInt(argv[3]);
        byte[] payload = new byte[1024];
        new Random(42).nextBytes(payload);
        try (BookKeeper bk = BookKeeper.newBuilder(conf).build()) {
            long warmId;
            try (WriteHandle warm = create(bk)) {
                warmId = warm.getId();
                write(warm, payload, WARMUP, 0, null);
            }
            try {
                if (mode.equals("read")) {
                    try (ReadHandle warm = open(bk, warmId)) {
                        read(warm, WARMUP);
                    }
                    try (ReadHandle rh = open(bk, Long.parseLong(argv[4]))) {
                        timed();
                        long cpu = cpu();
                        long start = System.nanoTime();
                        long count = read(rh, rh.getLastAddConfirmed() + 1);
                        report(count, start, cpu, null, -1);
                    }
                    return;
                }
            } finally {
                bk.newDeleteLedgerOp().withLedgerId(warmId).execute().get();
            }
            double rate = mode.equals("paced") ? Double.parseDouble(argv[4]) : 0;
            long[] latencies = new long[n];
            long id;
            try (WriteHandle wh = create(bk)) {
                id = wh.getId();
                if (!mode.equals("prepare")) {
                    timed();
                }
                long cpu = cpu();
                long start = System.nanoTime();
                write(wh, payload, n, rate, latencies);
                report(n, start, cpu, latencies, id);
            }
            if (!mode.equals("prepare")) {
                bk.newDeleteLedgerOp().withLedgerId(id).execute().get();
            }
        }
    }

    static WriteHandle create(BookKeeper bk) throws Exception {
        return bk.newCreateLedgerOp().withEnsembleSize(3).withWriteQuorumSize(2).withAckQuorumSize(2)
                .withDigestType(DigestType.CRC32C).withPassword(PASSWORD).execute().get();
    }

    static ReadHandle open(BookKeeper bk, long ledger) throws Exception {
        return bk.newOpenLedgerOp().withLedgerId(ledger).withPassword(PASSWORD).withRecovery(false).execute().get();
    }

    static void write(WriteHandle wh, byte[] payload, int n, double rate, long[] latencies) throws Exception {
        Semaphore window = new Semaphore(WINDOW);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime();
        for (int i = 0; i < n && failure.get() == null; i++) {
            long due = System.nanoTime();
            if (rate > 0) {
                due = start + (long) (i * 1e9 / rate);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
            }
            window.acquire();
            final int index = i;
            final long sent = due;
            wh.appendAsync(payload).whenComplete((entryId, error) -> {
                if (error != null) {
                    failure.compareAndSet(null, error);
                } else if (latencies != null) {
                    latencies[index] = System.nanoTime() - sent;
                }
                window.release();
            });
        }
        window.acquire(WINDOW);
        window.release(WINDOW);
        if (failure.get() != null) {
            throw new RuntimeException(failure.get());
        }
    }

    static long read(ReadHandle rh, long entries) throws Exception {
        CompletableFuture<LedgerEntries>[] inFlight = new CompletableFuture[READS_IN_FLIGHT];
        long next = 0;
        long count = 0;
        for (int slot = 0; next < entries || inFlight[slot] != null; slot = (slot + 1) % READS_IN_FLIGHT) {
            if (inFlight[slot] != null) {
                try (LedgerEntries done = inFlight[slot].get()) {
                    for (var entry : done) {
                        count += entry.getLength() > 0 ? 1 : 0;
                    }
                }
                inFlight[slot] = null;
            }
            if (next < entries) {
                long last = Math.min(entries, next + READ_CHUNK) - 1;
                inFlight[slot] = rh.readAsync(next, last);
                next = last + 1;
            }
        }
        return count;
    }

    /** Tells the driver that the timed phase starts (it samples the bookies' CPU then). */
    static void timed() {
        System.out.println("timed");
        System.out.flush();
    }

    static long cpu() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static void report(long count, long start, long cpu, long[] latencies, long ledger) {
        double seconds = (System.nanoTime() - start) / 1e9;
        double cpuSeconds = (cpu() - cpu) / 1e9;
        StringBuilder out = new StringBuilder("{\"entries\": " + count + ", \"seconds\": " + seconds
                + ", \"entriesPerSec\": " + Math.round(count / seconds) + ", \"cpuSeconds\": " + cpuSeconds);
        if (latencies != null) {
            long[] sorted = latencies.clone();
            Arrays.sort(sorted);
            out.append(", \"latencyMs\": {\"p50\": ").append(sorted[sorted.length / 2] / 1e6)
                    .append(", \"p99\": ").append(sorted[(int) (sorted.length * 0.99)] / 1e6).append("}");
        }
        if (ledger >= 0) {
            out.append(", \"ledgerId\": ").append(ledger);
        }
        System.out.println(out.append("}"));
    }
}
