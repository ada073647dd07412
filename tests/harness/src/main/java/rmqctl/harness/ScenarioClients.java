package rmqctl.harness;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Long-running driver for real RocketMQ Java clients, used by the rmqctl integration tests.
 *
 * <p>Protocol: one JSON object per line on stdin, exactly one JSON reply line per command on stdout.
 * A request may carry {@code "seq"}; the reply echoes it. Every reply has {@code "ok"}; failures are
 * {@code {"ok":false,"error":"..."}} and never end the program. Logs go to stderr (stdout is reserved
 * for replies: {@code System.out} is redirected to stderr at startup, so nothing a library prints can
 * corrupt the reply stream). The program exits 0 on {@code {"cmd":"shutdown"}} and on stdin EOF.
 *
 * <p>Commands: {@code ping}, {@code start_consumer}, {@code stop_consumer}, {@code produce},
 * {@code received}, {@code clear_received}, {@code assignments}, {@code subscriptions},
 * {@code shutdown}. See {@code tests/harness/realcluster.py} for the field list of each.
 *
 * <p>Compiles against the RocketMQ 4.9.x and 5.x client (classes whose package moved between the two,
 * such as {@code MessageModel}, are only touched through reflection).
 */
public final class ScenarioClients {

    private static PrintStream out;

    private final Map<String, ConsumerHolder> consumers = new TreeMap<>();
    private final Map<String, DefaultMQProducer> producers = new TreeMap<>();
    private final AtomicInteger producerSeq = new AtomicInteger();

    /** One started push consumer plus everything its listener recorded. */
    private static final class ConsumerHolder {
        final String id;
        final DefaultMQPushConsumer consumer;
        final List<Map<String, Object>> received = Collections.synchronizedList(new ArrayList<>());
        volatile String consumeResult = "SUCCESS";
        volatile long consumeDelayMs = 0;

        ConsumerHolder(String id, DefaultMQPushConsumer consumer) {
            this.id = id;
            this.consumer = consumer;
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        // Static settings of the client; must be set before the client classes are initialised.
        setDefaultProperty("rocketmq.client.rebalance.waitInterval", "1000");

        ScenarioClients app = new ScenarioClients();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        log("ScenarioClients ready (RocketMQ client " + app.clientVersion() + ")");
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
                Object parsed = Json.parse(line);
                if (!(parsed instanceof Map)) {
                    throw new IllegalArgumentException("a command must be a JSON object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) parsed;
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
            synchronized (ScenarioClients.class) {
                out.println(Json.write(reply));
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

    private static void setDefaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    static void log(String msg) {
        System.err.println("[ScenarioClients] " + msg);
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
                r.put("client_version", clientVersion());
                r.put("consumers", new ArrayList<>(consumers.keySet()));
                return r;
            }
            case "start_consumer":
                return startConsumer(req);
            case "stop_consumer":
                return stopConsumer(req);
            case "produce":
                return produce(req);
            case "received":
                return received(req);
            case "clear_received":
                return clearReceived(req);
            case "assignments":
                return assignments(req);
            case "subscriptions":
                return subscriptions(req);
            case "pin_sub_version":
                return pinSubVersion(req);
            case "shutdown":
                shutdownAll();
                return ok();
            default:
                throw new IllegalArgumentException("unknown cmd " + cmd);
        }
    }

    // ------------------------------------------------------------------ helpers for request fields

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

    private static boolean bool(Map<String, Object> m, String key, boolean dflt) {
        Object v = m.get(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Boolean) {
            return (Boolean) v;
        }
        return Boolean.parseBoolean(v.toString());
    }

    /** Calls {@code setter(EnumType.valueOf(name))} where EnumType is the setter's parameter type. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void setEnum(Object target, String setter, String name) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(setter) && m.getParameterCount() == 1 && m.getParameterTypes()[0].isEnum()) {
                Class<? extends Enum> type = (Class<? extends Enum>) m.getParameterTypes()[0];
                m.invoke(target, Enum.valueOf(type, name));
                return;
            }
        }
        throw new IllegalStateException("no enum setter " + setter + " on " + target.getClass().getName());
    }

    private static Object call(Object target, String getter) {
        try {
            return target.getClass().getMethod(getter).invoke(target);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private String clientVersion() {
        try {
            Class<?> v = Class.forName("org.apache.rocketmq.common.MQVersion");
            int current = v.getField("CURRENT_VERSION").getInt(null);
            return (String) v.getMethod("getVersionDesc", int.class).invoke(null, current);
        } catch (ReflectiveOperationException e) {
            return "unknown";
        }
    }

    private static AllocateMessageQueueStrategy strategy(String name) {
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH":
                return new AllocateMessageQueueConsistentHash();
            default:
                throw new IllegalArgumentException("unknown strategy " + name
                        + " (expected AVG, AVG_BY_CIRCLE or CONSISTENT_HASH)");
        }
    }

    private static String consumeFromWhere(String v) {
        switch (v) {
            case "FIRST":
                return "CONSUME_FROM_FIRST_OFFSET";
            case "LAST":
                return "CONSUME_FROM_LAST_OFFSET";
            case "TIMESTAMP":
                return "CONSUME_FROM_TIMESTAMP";
            default:
                if (v.startsWith("CONSUME_FROM_")) {
                    return v;
                }
                throw new IllegalArgumentException("unknown consume_from " + v + " (expected FIRST, LAST, TIMESTAMP)");
        }
    }

    // ------------------------------------------------------------------ commands

    private Map<String, Object> startConsumer(Map<String, Object> req) throws Exception {
        String id = required(req, "id");
        if (consumers.containsKey(id)) {
            throw new IllegalArgumentException("consumer id " + id + " already started");
        }
        String namesrv = required(req, "namesrv");
        String group = required(req, "group");
        Object subsObj = req.get("subscriptions");
        if (!(subsObj instanceof Map) || ((Map<?, ?>) subsObj).isEmpty()) {
            throw new IllegalArgumentException("\"subscriptions\" must be a non-empty object topic -> expression");
        }
        String strategyName = str(req, "strategy", "AVG");
        String model = str(req, "message_model", "CLUSTERING");
        if (!model.equals("CLUSTERING") && !model.equals("BROADCASTING")) {
            throw new IllegalArgumentException("unknown message_model " + model);
        }
        String cfw = consumeFromWhere(str(req, "consume_from", "FIRST"));

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(str(req, "instance_name", "harness_" + id));
        String clientIp = str(req, "client_ip", "127.0.0.1");
        if (!clientIp.isEmpty()) {
            c.setClientIP(clientIp);
        }
        c.setAllocateMessageQueueStrategy(strategy(strategyName));
        setEnum(c, "setMessageModel", model);
        setEnum(c, "setConsumeFromWhere", cfw);
        c.setHeartbeatBrokerInterval((int) num(req, "heartbeat_interval_ms", 1000));
        c.setPollNameServerInterval((int) num(req, "poll_name_server_interval_ms", 1000));
        c.setPersistConsumerOffsetInterval((int) num(req, "persist_offset_interval_ms", 1000));
        c.setPostSubscriptionWhenPull(bool(req, "post_subscription_when_pull", false));
        if (req.containsKey("pull_delay_on_exception_ms")) {
            c.setPullTimeDelayMillsWhenException(num(req, "pull_delay_on_exception_ms", 1000));
        }
        if (req.containsKey("consume_thread_min")) {
            c.setConsumeThreadMin((int) num(req, "consume_thread_min", 20));
        }
        if (req.containsKey("consume_thread_max")) {
            c.setConsumeThreadMax((int) num(req, "consume_thread_max", 20));
        }
        if (req.containsKey("pull_batch_size")) {
            c.setPullBatchSize((int) num(req, "pull_batch_size", 32));
        }
        if (req.containsKey("max_reconsume_times")) {
            c.setMaxReconsumeTimes((int) num(req, "max_reconsume_times", -1));
        }
        for (Map.Entry<?, ?> e : ((Map<?, ?>) subsObj).entrySet()) {
            c.subscribe(String.valueOf(e.getKey()), e.getValue() == null ? "*" : String.valueOf(e.getValue()));
        }

        ConsumerHolder h = new ConsumerHolder(id, c);
        h.consumeResult = str(req, "consume_result", "SUCCESS");
        if (!h.consumeResult.equals("SUCCESS") && !h.consumeResult.equals("RECONSUME_LATER")) {
            throw new IllegalArgumentException("consume_result must be SUCCESS or RECONSUME_LATER");
        }
        h.consumeDelayMs = num(req, "consume_delay_ms", 0);
        c.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                MessageQueue mq = ctx.getMessageQueue();
                long now = System.currentTimeMillis();
                for (MessageExt m : msgs) {
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("topic", m.getTopic());
                    r.put("tag", m.getTags());
                    r.put("queue_id", m.getQueueId());
                    r.put("broker", mq == null ? null : mq.getBrokerName());
                    r.put("pulled_topic", mq == null ? null : mq.getTopic());
                    r.put("msg_id", m.getMsgId());
                    r.put("offset", m.getQueueOffset());
                    r.put("reconsume_times", m.getReconsumeTimes());
                    r.put("keys", m.getKeys());
                    r.put("body", m.getBody() == null ? null : new String(m.getBody(), StandardCharsets.UTF_8));
                    r.put("received_at", now);
                    h.received.add(r);
                }
                long delay = h.consumeDelayMs;
                if (delay > 0) {
                    try {
                        Thread.sleep(delay);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                    }
                }
                return "RECONSUME_LATER".equals(h.consumeResult)
                        ? ConsumeConcurrentlyStatus.RECONSUME_LATER
                        : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        try {
            c.start();
        } catch (Throwable t) {
            try {
                c.shutdown();
            } catch (Throwable ignored) {
                // best effort
            }
            throw t;
        }
        consumers.put(id, h);
        Map<String, Object> r = ok();
        r.put("client_id", clientId(c));
        log("started consumer " + id + " group=" + group + " clientId=" + clientId(c));
        return r;
    }

    private static String clientId(DefaultMQPushConsumer c) {
        Object factory = c.getDefaultMQPushConsumerImpl().getmQClientFactory();
        if (factory != null) {
            Object cid = call(factory, "getClientId");
            if (cid != null) {
                return cid.toString();
            }
        }
        return c.buildMQClientId();
    }

    private Map<String, Object> stopConsumer(Map<String, Object> req) {
        String id = required(req, "id");
        ConsumerHolder h = consumers.remove(id);
        if (h == null) {
            throw new IllegalArgumentException("no consumer with id " + id);
        }
        h.consumer.shutdown();
        log("stopped consumer " + id);
        return ok();
    }

    private DefaultMQProducer producer(String namesrv, Map<String, Object> req) throws Exception {
        DefaultMQProducer p = producers.get(namesrv);
        if (p == null) {
            p = new DefaultMQProducer(str(req, "producer_group", "HARNESS_PRODUCER"));
            p.setNamesrvAddr(namesrv);
            p.setInstanceName("harness_producer_" + producerSeq.incrementAndGet());
            p.setClientIP("127.0.0.1");
            p.setSendMsgTimeout(10000);
            p.setPollNameServerInterval(1000);
            p.setHeartbeatBrokerInterval(5000);
            p.start();
            producers.put(namesrv, p);
        }
        return p;
    }

    private Map<String, Object> produce(Map<String, Object> req) throws Exception {
        String namesrv = required(req, "namesrv");
        String topic = required(req, "topic");
        String tag = str(req, "tag", null);
        String keys = str(req, "keys", null);
        String bodyPrefix = str(req, "body", null);
        int count = (int) num(req, "count", 1);
        List<Integer> queueIds = new ArrayList<>();
        if (req.get("queue_ids") instanceof List) {
            for (Object o : (List<?>) req.get("queue_ids")) {
                queueIds.add(((Number) o).intValue());
            }
        } else if (req.get("queue_id") != null) {
            queueIds.add((int) num(req, "queue_id", 0));
        }
        DefaultMQProducer p = producer(namesrv, req);
        List<MessageQueue> mqs = null;
        if (!queueIds.isEmpty()) {
            mqs = p.fetchPublishMessageQueues(topic);
            if (mqs.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " has no publishable queue");
            }
        }
        List<Map<String, Object>> sent = new ArrayList<>();
        List<Integer> sentQueues = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String body = bodyPrefix == null ? topic + "/" + (tag == null ? "" : tag) + "/" + i
                    : (count == 1 ? bodyPrefix : bodyPrefix + "-" + i);
            Message msg = new Message(topic, tag, keys, body.getBytes(StandardCharsets.UTF_8));
            SendResult res;
            if (!queueIds.isEmpty()) {
                int qid = queueIds.get(i % queueIds.size());
                MessageQueue target = null;
                for (MessageQueue mq : mqs) {
                    if (mq.getQueueId() == qid) {
                        target = mq;
                        break;
                    }
                }
                if (target == null) {
                    throw new IllegalArgumentException("topic " + topic + " has no queue " + qid
                            + " (queues: " + mqs + ")");
                }
                res = p.send(msg, target);
            } else {
                res = p.send(msg);
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("queue_id", res.getMessageQueue().getQueueId());
            r.put("broker", res.getMessageQueue().getBrokerName());
            r.put("msg_id", res.getMsgId());
            r.put("offset", res.getQueueOffset());
            r.put("status", String.valueOf(res.getSendStatus()));
            r.put("tag", tag);
            r.put("body", body);
            sent.add(r);
            sentQueues.add(res.getMessageQueue().getQueueId());
        }
        Map<String, Object> r = ok();
        r.put("queue_ids", sentQueues);
        r.put("messages", sent);
        return r;
    }

    private List<ConsumerHolder> selected(Map<String, Object> req) {
        String id = str(req, "id", null);
        if (id == null) {
            return new ArrayList<>(consumers.values());
        }
        ConsumerHolder h = consumers.get(id);
        if (h == null) {
            throw new IllegalArgumentException("no consumer with id " + id);
        }
        return List.of(h);
    }

    private Map<String, Object> received(Map<String, Object> req) {
        Map<String, Object> all = new TreeMap<>();
        for (ConsumerHolder h : selected(req)) {
            synchronized (h.received) {
                all.put(h.id, new ArrayList<>(h.received));
            }
        }
        Map<String, Object> r = ok();
        r.put("received", all);
        return r;
    }

    private Map<String, Object> clearReceived(Map<String, Object> req) {
        for (ConsumerHolder h : selected(req)) {
            h.received.clear();
        }
        return ok();
    }

    private Map<String, Object> assignments(Map<String, Object> req) {
        Map<String, Object> all = new TreeMap<>();
        Map<String, Object> ids = new TreeMap<>();
        for (ConsumerHolder h : selected(req)) {
            Map<MessageQueue, ProcessQueue> table =
                    h.consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
            OffsetStore store = h.consumer.getDefaultMQPushConsumerImpl().getOffsetStore();
            List<Map.Entry<MessageQueue, ProcessQueue>> entries = new ArrayList<>(table.entrySet());
            entries.sort(Comparator.comparing(Map.Entry::getKey));
            List<Map<String, Object>> list = new ArrayList<>();
            for (Map.Entry<MessageQueue, ProcessQueue> e : entries) {
                ProcessQueue pq = e.getValue();
                if (pq.isDropped()) {
                    continue;
                }
                MessageQueue mq = e.getKey();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("topic", mq.getTopic());
                m.put("broker", mq.getBrokerName());
                m.put("queue_id", mq.getQueueId());
                long offset = store == null ? -1 : store.readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
                m.put("offset", offset);
                m.put("cached_msg_count", pq.getMsgCount().get());
                list.add(m);
            }
            all.put(h.id, list);
            ids.put(h.id, clientId(h.consumer));
        }
        Map<String, Object> r = ok();
        r.put("assignments", all);
        r.put("client_ids", ids);
        return r;
    }

    private Map<String, Object> subscriptions(Map<String, Object> req) {
        Map<String, Object> all = new TreeMap<>();
        for (ConsumerHolder h : selected(req)) {
            Map<String, ?> inner = h.consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getSubscriptionInner();
            Map<String, Object> subs = new TreeMap<>();
            for (Map.Entry<String, ?> e : inner.entrySet()) {
                Object sd = e.getValue();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("sub_string", call(sd, "getSubString"));
                m.put("sub_version", call(sd, "getSubVersion"));
                Object tags = call(sd, "getTagsSet");
                m.put("tags", tags == null ? List.of() : new ArrayList<>((java.util.Collection<?>) tags));
                Object codes = call(sd, "getCodeSet");
                m.put("codes", codes == null ? List.of() : new ArrayList<>((java.util.Collection<?>) codes));
                m.put("expression_type", call(sd, "getExpressionType"));
                subs.put(e.getKey(), m);
            }
            all.put(h.id, subs);
        }
        Map<String, Object> r = ok();
        r.put("subscriptions", all);
        return r;
    }

    /**
     * Sets the subVersion of one topic's SubscriptionData and heartbeats every broker at once, so
     * which client's expression the broker stores is decided by the test, not by a millisecond race
     * (the broker keeps the strictly greatest version it ever received for a topic).
     */
    private Map<String, Object> pinSubVersion(Map<String, Object> req) throws Exception {
        String id = required(req, "id");
        String topic = required(req, "topic");
        long version = num(req, "version", 0);
        ConsumerHolder h = consumers.get(id);
        if (h == null) {
            throw new IllegalArgumentException("no consumer with id " + id);
        }
        Object sd = h.consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getSubscriptionInner().get(topic);
        if (sd == null) {
            throw new IllegalArgumentException("consumer " + id + " does not subscribe " + topic);
        }
        sd.getClass().getMethod("setSubVersion", long.class).invoke(sd, version);
        Object factory = h.consumer.getDefaultMQPushConsumerImpl().getmQClientFactory();
        factory.getClass().getMethod("sendHeartbeatToAllBrokerWithLock").invoke(factory);
        return ok();
    }

    /**
     * Shuts every consumer and producer down in parallel: each client instance's shutdown can block
     * up to 3 s (its NettyEventExecutor polls with a 3 s timeout), so doing them one after another
     * would make teardown slow.
     */
    private void shutdownAll() {
        List<Thread> threads = new ArrayList<>();
        for (ConsumerHolder h : consumers.values()) {
            threads.add(new Thread(() -> {
                try {
                    h.consumer.shutdown();
                } catch (Throwable t) {
                    log("shutdown of consumer " + h.id + " failed: " + t);
                }
            }, "shutdown-" + h.id));
        }
        for (DefaultMQProducer p : producers.values()) {
            threads.add(new Thread(() -> {
                try {
                    p.shutdown();
                } catch (Throwable t) {
                    log("shutdown of producer failed: " + t);
                }
            }, "shutdown-producer"));
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            try {
                t.join(30000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        consumers.clear();
        producers.clear();
    }
}
