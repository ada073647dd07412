package rmqctl.harness.grpc;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

import com.google.gson.Gson;
import com.google.gson.reflect.TypeToken;

/**
 * Long-running driver for rocketmq-client-java (the gRPC SDK of RocketMQ 5.x, talking to a proxy),
 * used by the rmqctl integration tests beside {@code ScenarioClients} (the remoting client).
 *
 * <p>Protocol: the same as ScenarioClients: one JSON object per line on stdin, exactly one JSON reply
 * line per command on stdout, {@code "seq"} echoed, {@code {"ok":false,"error":"..."}} on failure;
 * {@code System.out} is redirected to stderr so nothing a library prints corrupts the replies.
 *
 * <p>Commands: {@code ping}; {@code start_push} and {@code start_simple} (a push consumer, or a
 * simple consumer polled by a thread of its own; either may fail or leave un-ACKed the messages
 * carrying one tag); {@code stop}; {@code produce}; {@code counts} (per consumer: received, acked,
 * failed, unacked, and the delivery attempts seen); {@code shutdown}. A command that builds a client may carry {@code access_key} and
 * {@code secret_key} (a proxy with ACL 2.0 authentication). Field lists in
 * {@code tests/harness/proxycluster.py}.
 */
public final class GrpcClients {

    private static PrintStream out;
    private static final Gson GSON = new Gson();

    private final ClientServiceProvider provider = ClientServiceProvider.loadService();
    private final Map<String, Holder> consumers = new TreeMap<>();
    private final Map<String, Producer> producers = new TreeMap<>();

    /** One consumer and what it saw. */
    private static final class Holder {
        final String id;
        final String kind;
        final String group;
        volatile String clientId = "";
        PushConsumer push;
        SimpleConsumer simple;
        Thread poller;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicInteger received = new AtomicInteger();
        final AtomicInteger acked = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final AtomicInteger unacked = new AtomicInteger();
        /** message id -> highest delivery attempt seen */
        final Map<String, Integer> attempts = Collections.synchronizedMap(new TreeMap<>());

        Holder(String id, String kind, String group) {
            this.id = id;
            this.kind = kind;
            this.group = group;
        }

        void saw(MessageView view) {
            received.incrementAndGet();
            attempts.merge(view.getMessageId().toString(), view.getDeliveryAttempt(), Math::max);
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        GrpcClients app = new GrpcClients();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        log("GrpcClients ready");
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            Map<String, Object> reply;
            Object seq = null;
            boolean exit = false;
            try {
                Map<String, Object> req = GSON.fromJson(line, new TypeToken<Map<String, Object>>() { }.getType());
                if (req == null) {
                    throw new IllegalArgumentException("a command must be a JSON object");
                }
                seq = req.get("seq");
                String cmd = str(req, "cmd", null);
                if (cmd == null) {
                    throw new IllegalArgumentException("missing \"cmd\"");
                }
                exit = "shutdown".equals(cmd);
                reply = app.dispatch(cmd, req);
            } catch (Throwable t) {
                reply = error(t);
            }
            if (seq != null) {
                reply.put("seq", seq);
            }
            synchronized (GrpcClients.class) {
                out.println(GSON.toJson(reply));
                out.flush();
            }
            if (exit) {
                System.exit(0);
            }
        }
        log("stdin closed, shutting down");
        app.shutdownAll();
        System.exit(0);
    }

    static void log(String msg) {
        System.err.println("[GrpcClients] " + msg);
        System.err.flush();
    }

    private static Map<String, Object> ok() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", true);
        return m;
    }

    private static Map<String, Object> error(Throwable t) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", false);
        StringBuilder b = new StringBuilder(t.getClass().getName() + ": " + t.getMessage());
        Throwable c = t.getCause();
        int depth = 0;
        while (c != null && depth++ < 5) {
            b.append(" / caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage());
            c = c.getCause();
        }
        m.put("error", b.toString());
        return m;
    }

    private Map<String, Object> dispatch(String cmd, Map<String, Object> req) throws Exception {
        switch (cmd) {
            case "ping": {
                Map<String, Object> r = ok();
                r.put("consumers", new ArrayList<>(consumers.keySet()));
                return r;
            }
            case "start_push":
                return startPush(req);
            case "start_simple":
                return startSimple(req);
            case "stop":
                return stop(req);
            case "produce":
                return produce(req);
            case "counts":
                return counts(req);
            case "shutdown":
                shutdownAll();
                return ok();
            default:
                throw new IllegalArgumentException("unknown cmd " + cmd);
        }
    }

    // ------------------------------------------------------------------ request fields

    private static String str(Map<String, Object> m, String key, String dflt) {
        Object v = m.get(key);
        return v == null ? dflt : v.toString();
    }

    private static String required(Map<String, Object> m, String key) {
        String v = str(m, key, null);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("missing \"" + key + "\"");
        }
        return v;
    }

    private static long num(Map<String, Object> m, String key, long dflt) {
        Object v = m.get(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Number) {
            return ((Number) v).longValue();
        }
        return Long.parseLong(v.toString());
    }

    private static ClientConfiguration configuration(Map<String, Object> req) {
        ClientConfigurationBuilder builder = ClientConfiguration.newBuilder()
            .setEndpoints(required(req, "endpoints"))
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(num(req, "request_timeout_s", 5)));
        Object accessKey = req.get("access_key");
        if (accessKey != null) {
            // a proxy with authentication on: the SDK signs every request with these keys
            builder.setCredentialProvider(
                new StaticSessionCredentialsProvider(accessKey.toString(), required(req, "secret_key")));
        }
        return builder.build();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, FilterExpression> subscriptions(Map<String, Object> req) {
        Object raw = req.get("subscriptions");
        if (!(raw instanceof Map) || ((Map<String, Object>) raw).isEmpty()) {
            throw new IllegalArgumentException("\"subscriptions\" must map topics to tag expressions");
        }
        Map<String, FilterExpression> subs = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : ((Map<String, Object>) raw).entrySet()) {
            subs.put(e.getKey(), new FilterExpression(String.valueOf(e.getValue()), FilterExpressionType.TAG));
        }
        return subs;
    }

    private Holder newHolder(Map<String, Object> req, String kind) {
        String id = required(req, "id");
        if (consumers.containsKey(id)) {
            throw new IllegalArgumentException("consumer " + id + " already exists");
        }
        return new Holder(id, kind, required(req, "group"));
    }

    /** The SDK's client id (a protected field of ClientImpl), as the proxy reports it. */
    private static String clientId(Object client) {
        for (Class<?> c = client.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField("clientId");
                f.setAccessible(true);
                return String.valueOf(f.get(client));
            } catch (NoSuchFieldException e) {
                // keep walking up
            } catch (ReflectiveOperationException | RuntimeException e) {
                return "";
            }
        }
        return "";
    }

    private static Map<String, Object> started(Holder h) {
        Map<String, Object> r = ok();
        r.put("id", h.id);
        r.put("client_id", h.clientId);
        return r;
    }

    // ------------------------------------------------------------------ consumers

    /**
     * A push consumer. {@code fail_tag}: messages with this tag are answered FAILURE (the proxy
     * redelivers them after the group's retry delay); every other message SUCCESS.
     */
    private Map<String, Object> startPush(Map<String, Object> req) throws Exception {
        Holder h = newHolder(req, "push");
        String failTag = str(req, "fail_tag", null);
        h.push = provider.newPushConsumerBuilder()
            .setClientConfiguration(configuration(req))
            .setConsumerGroup(h.group)
            .setSubscriptionExpressions(subscriptions(req))
            .setConsumptionThreadCount((int) num(req, "threads", 4))
            .setMessageListener(view -> {
                h.saw(view);
                if (failTag != null && failTag.equals(view.getTag().orElse(null))) {
                    h.failed.incrementAndGet();
                    return ConsumeResult.FAILURE;
                }
                h.acked.incrementAndGet();
                return ConsumeResult.SUCCESS;
            })
            .build();
        h.clientId = clientId(h.push);
        consumers.put(h.id, h);
        return started(h);
    }

    /**
     * A simple consumer polled by its own thread: {@code receive(batch, invisible_s)} in a loop
     * (long-polling {@code await_s}), then ACK of each message, except those whose tag is
     * {@code skip_ack_tag}: they are left to become visible again and be redelivered.
     */
    private Map<String, Object> startSimple(Map<String, Object> req) throws Exception {
        Holder h = newHolder(req, "simple");
        String skipTag = str(req, "skip_ack_tag", null);
        int batch = (int) num(req, "batch", 16);
        Duration invisible = Duration.ofSeconds(num(req, "invisible_s", 15));
        h.simple = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration(req))
            .setConsumerGroup(h.group)
            .setSubscriptionExpressions(subscriptions(req))
            .setAwaitDuration(Duration.ofSeconds(num(req, "await_s", 5)))
            .build();
        h.clientId = clientId(h.simple);
        SimpleConsumer simple = h.simple;
        h.poller = new Thread(() -> {
            while (h.running.get()) {
                List<MessageView> views;
                try {
                    views = simple.receive(batch, invisible);
                } catch (Exception e) {
                    if (h.running.get()) {
                        log(h.id + " receive: " + e);
                        sleepQuietly(500);
                    }
                    continue;
                }
                for (MessageView view : views) {
                    h.saw(view);
                    if (skipTag != null && skipTag.equals(view.getTag().orElse(null))) {
                        h.unacked.incrementAndGet();
                        continue;
                    }
                    try {
                        simple.ack(view);
                        h.acked.incrementAndGet();
                    } catch (Exception e) {
                        log(h.id + " ack: " + e);
                    }
                }
            }
        }, "simple-" + h.id);
        h.poller.setDaemon(true);
        h.poller.start();
        consumers.put(h.id, h);
        return started(h);
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private Map<String, Object> stop(Map<String, Object> req) throws Exception {
        Holder h = consumers.remove(required(req, "id"));
        if (h == null) {
            throw new IllegalArgumentException("no consumer " + req.get("id"));
        }
        close(h);
        return ok();
    }

    private static void close(Holder h) {
        h.running.set(false);
        try {
            if (h.push != null) {
                h.push.close();
            }
            if (h.simple != null) {
                h.simple.close();
            }
            if (h.poller != null) {
                h.poller.join(15_000);
            }
        } catch (Exception e) {
            log(h.id + " close: " + e);
        }
    }

    // ------------------------------------------------------------------ producer and counts

    private Map<String, Object> produce(Map<String, Object> req) throws Exception {
        String endpoints = required(req, "endpoints");
        String topic = required(req, "topic");
        Producer producer = producers.get(endpoints);
        if (producer == null) {
            producer = provider.newProducerBuilder()
                .setClientConfiguration(configuration(req))
                .build();
            producers.put(endpoints, producer);
        }
        String tag = str(req, "tag", null);
        String keys = str(req, "keys", null);
        long count = num(req, "count", 1);
        List<Object> sent = new ArrayList<>();
        for (long i = 0; i < count; i++) {
            var builder = provider.newMessageBuilder().setTopic(topic)
                .setBody(("rmqctl " + i).getBytes(StandardCharsets.UTF_8));
            if (tag != null) {
                builder.setTag(tag);
            }
            if (keys != null) {
                builder.setKeys(keys);
            }
            Message message = builder.build();
            SendReceipt receipt = producer.send(message);
            sent.add(receipt.getMessageId().toString());
        }
        Map<String, Object> r = ok();
        r.put("message_ids", sent);
        return r;
    }

    private Map<String, Object> counts(Map<String, Object> req) {
        String only = str(req, "id", null);
        Map<String, Object> all = new LinkedHashMap<>();
        for (Holder h : consumers.values()) {
            if (only != null && !only.equals(h.id)) {
                continue;
            }
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("kind", h.kind);
            c.put("group", h.group);
            c.put("client_id", h.clientId);
            c.put("received", h.received.get());
            c.put("acked", h.acked.get());
            c.put("failed", h.failed.get());
            c.put("unacked", h.unacked.get());
            int maxAttempt = 0;
            synchronized (h.attempts) {
                for (int a : h.attempts.values()) {
                    maxAttempt = Math.max(maxAttempt, a);
                }
                c.put("distinct", h.attempts.size());
            }
            c.put("max_attempt", maxAttempt);
            all.put(h.id, c);
        }
        Map<String, Object> r = ok();
        r.put("counts", all);
        return r;
    }

    private void shutdownAll() {
        Collection<Holder> holders = new ArrayList<>(consumers.values());
        consumers.clear();
        for (Holder h : holders) {
            close(h);
        }
        for (Producer p : producers.values()) {
            try {
                p.close();
            } catch (Exception e) {
                log("producer close: " + e);
            }
        }
        producers.clear();
    }
}
