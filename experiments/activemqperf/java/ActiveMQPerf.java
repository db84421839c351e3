// ActiveMQPerf: the paper's producer and consumer tests (paper §5) against ActiveMQ
// through its own JMS client (Debian's activemq-client.jar). Compiled with javac at
// run time by the Go package github.com/netdb11/kafka/experiments/activemqperf.
//
// Producer: persistent BytesMessages to a durable queue, one message per send, sent
// asynchronously (jms.useAsyncSend=true: the producer does not wait for the broker's
// receipt); optionally in JMS transactions of --tx-size messages. Consumer: one
// consumer, prefetch --prefetch, AUTO_ACKNOWLEDGE. The last line of standard output is
// one JSON object: messages, bytes, seconds, msgs_per_sec, mb_per_sec, samples.
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;

import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;

public final class ActiveMQPerf {
    private static final double MB = 1 << 20;

    private String url = "tcp://127.0.0.1:61616";
    private String queue = "perf";
    private String mode = "produce";
    private long messages = 100_000;
    private int messageSize = 200;
    private int txSize = 0;
    private int prefetch = 1000;
    private long durationMs = 0;
    private long sampleMs = 250;

    private final AtomicLong count = new AtomicLong();
    private final List<double[]> samples = new ArrayList<>();
    private volatile boolean sampling = true;
    private long startNanos;

    public static void main(String[] args) {
        ActiveMQPerf p = new ActiveMQPerf();
        try {
            p.parse(args);
            p.run();
        } catch (IllegalArgumentException e) {
            System.err.println("ActiveMQPerf: " + e.getMessage());
            System.exit(2);
        } catch (Exception e) {
            System.err.println("ActiveMQPerf: " + e);
            e.printStackTrace(System.err);
            System.exit(1);
        }
        System.exit(0);
    }

    private void parse(String[] args) {
        for (String a : args) {
            int eq = a.indexOf('=');
            if (!a.startsWith("--") || eq < 0) {
                throw new IllegalArgumentException("want --name=value, got \"" + a + "\"");
            }
            String k = a.substring(2, eq), v = a.substring(eq + 1);
            switch (k) {
                case "url": url = v; break;
                case "queue": queue = v; break;
                case "mode": mode = v; break;
                case "messages": messages = positive(k, v); break;
                case "message-size": messageSize = (int) positive(k, v); break;
                case "tx-size": txSize = (int) nonNegative(k, v); break;
                case "prefetch": prefetch = (int) nonNegative(k, v); break;
                case "duration-ms": durationMs = nonNegative(k, v); break;
                case "sample-ms": sampleMs = positive(k, v); break;
                default: throw new IllegalArgumentException("unknown option --" + k);
            }
        }
        if (!mode.equals("produce") && !mode.equals("consume") && !mode.equals("reset")) {
            throw new IllegalArgumentException("--mode=" + mode + ": want produce, consume or reset");
        }
    }

    private static long positive(String k, String v) {
        long n = nonNegative(k, v);
        if (n == 0) throw new IllegalArgumentException("--" + k + " must be > 0");
        return n;
    }

    private static long nonNegative(String k, String v) {
        try {
            long n = Long.parseLong(v);
            if (n < 0) throw new IllegalArgumentException("--" + k + "=" + v + " must be >= 0");
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + k + "=" + v + " is not an integer");
        }
    }

    private void run() throws Exception {
        // Paper §5: asynchronous sends; the consumer's prefetch window.
        String sep = url.contains("?") ? "&" : "?";
        String full = url + sep + "jms.useAsyncSend=true&jms.prefetchPolicy.all=" + prefetch;
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(full);
        Connection conn = f.createConnection();
        try {
            conn.start();
            switch (mode) {
                case "produce": produce((ActiveMQConnection) conn); break;
                case "consume": consume(conn); break;
                default: reset((ActiveMQConnection) conn); break;
            }
        } finally {
            conn.close();
        }
    }

    private void reset(ActiveMQConnection conn) throws Exception {
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(queue);
        conn.destroyDestination((org.apache.activemq.command.ActiveMQDestination) q);
        s.close();
    }

    private void produce(ActiveMQConnection conn) throws Exception {
        boolean tx = txSize > 0;
        Session s = conn.createSession(tx, tx ? Session.SESSION_TRANSACTED : Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = s.createProducer(s.createQueue(queue));
        p.setDeliveryMode(DeliveryMode.PERSISTENT);
        byte[] payload = new byte[messageSize];
        new Random(20011).nextBytes(payload);

        Thread sampler = startSampler();
        long deadline = durationMs > 0 ? startNanos + durationMs * 1_000_000L : Long.MAX_VALUE;
        long n = messages;
        int inTx = 0;
        for (long i = 0; i < n; i++) {
            if ((i & 1023) == 0 && System.nanoTime() > deadline) {
                n = i;
                break;
            }
            if (i == n - 1 && !tx) {
                // The last message is sent synchronously: its receipt arrives after
                // the broker has processed every earlier message of this connection,
                // so the clock stops when the broker holds them all.
                conn.setUseAsyncSend(false);
            }
            BytesMessage m = s.createBytesMessage();
            m.writeBytes(payload);
            p.send(m);
            count.incrementAndGet();
            if (tx && (++inTx == txSize || i == n - 1)) {
                s.commit();
                inTx = 0;
            }
        }
        if (tx && inTx > 0) {
            s.commit();
        }
        if (!tx && n < messages) {
            // Capped run: one synchronous message to drain the connection.
            conn.setUseAsyncSend(false);
            BytesMessage m = s.createBytesMessage();
            m.writeBytes(payload);
            p.send(m);
            count.incrementAndGet();
        }
        finish(sampler);
        s.close();
    }

    private void consume(Connection conn) throws Exception {
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer c = s.createConsumer(s.createQueue(queue));
        Thread sampler = startSampler();
        long deadline = durationMs > 0 ? startNanos + durationMs * 1_000_000L : Long.MAX_VALUE;
        long bytes = 0;
        while (count.get() < messages) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) break;
            Message m = c.receive(Math.min(left, 1000));
            if (m == null) continue;
            if (m instanceof BytesMessage) bytes += ((BytesMessage) m).getBodyLength();
            count.incrementAndGet();
        }
        this.consumedBytes = bytes;
        finish(sampler);
        c.close();
        s.close();
    }

    private long consumedBytes = -1;

    private Thread startSampler() {
        startNanos = System.nanoTime();
        Thread t = new Thread(() -> {
            long next = startNanos + sampleMs * 1_000_000L;
            while (sampling) {
                long wait = (next - System.nanoTime()) / 1_000_000L;
                if (wait > 0) {
                    try {
                        Thread.sleep(wait);
                    } catch (InterruptedException e) {
                        return;
                    }
                    continue;
                }
                addSample(System.nanoTime());
                next += sampleMs * 1_000_000L;
            }
        }, "sampler");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private synchronized void addSample(long now) {
        samples.add(new double[] {(now - startNanos) / 1e9, count.get()});
    }

    private void finish(Thread sampler) throws InterruptedException {
        long end = System.nanoTime();
        sampling = false;
        sampler.interrupt();
        sampler.join();
        addSample(end);
        double secs = (end - startNanos) / 1e9;
        long n = count.get();
        long bytes = consumedBytes >= 0 ? consumedBytes : n * messageSize;
        StringBuilder b = new StringBuilder();
        b.append("{\"messages\":").append(n)
                .append(",\"bytes\":").append(bytes)
                .append(",\"seconds\":").append(secs)
                .append(",\"msgs_per_sec\":").append(secs > 0 ? n / secs : 0)
                .append(",\"mb_per_sec\":").append(secs > 0 ? bytes / MB / secs : 0)
                .append(",\"samples\":[");
        synchronized (this) {
            for (int i = 0; i < samples.size(); i++) {
                if (i > 0) b.append(',');
                b.append("{\"t\":").append(samples.get(i)[0])
                        .append(",\"messages\":").append((long) samples.get(i)[1]).append('}');
            }
        }
        b.append("]}");
        System.err.printf("%s: %d messages, %.2f s, %.0f msg/s%n", mode, n, secs, secs > 0 ? n / secs : 0);
        System.out.println(b);
    }
}
