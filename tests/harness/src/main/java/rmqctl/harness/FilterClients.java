package rmqctl.harness;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Real Java clients for the filter and orderly tests: push consumers subscribing by tag or by SQL92
 * ({@code MessageSelector.bySql}), concurrent or orderly listeners (an orderly one answers
 * SUSPEND_CURRENT_QUEUE_A_MOMENT for every message of chosen queue ids), and a producer that sets
 * user properties. Every listener records what it received (tag, properties, queue, offset), and
 * a stopped consumer keeps its record.
 *
 * <p>Protocol: one JSON object per line on stdin, one JSON reply per line on stdout (logs on
 * stderr), like {@code ScenarioClients}. Commands: {@code ping}; {@code start_consumer} (id, namesrv,
 * group, topic, expression, sql, orderly, suspend_queues, instance_name); {@code produce} (namesrv,
 * topic, tag, count, queue, properties: name to a list of values taken in turn); {@code received}
 * (id to the list of received messages; SUSPEND answers are not receipts); {@code resubscribe}
 * (id: subscribe a running consumer again to its own expression, which stamps a new subVersion and
 * heartbeats at once, so its expression becomes the group's stored one); {@code stop_consumer}
 * (id); {@code shutdown}.
 */
public final class FilterClients {

    private static PrintStream out;

    private final Map<String, DefaultMQPushConsumer> consumers = new TreeMap<>();
    private final Map<String, List<Map<String, Object>>> received = new TreeMap<>();
    private final Map<String, Map<String, Object>> starts = new TreeMap<>();
    private DefaultMQProducer producer;

    private FilterClients() {
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        FilterClients app = new FilterClients();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
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
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) Json.parse(line);
                seq = req.get("seq");
                String cmd = String.valueOf(req.get("cmd"));
                exit = "shutdown".equals(cmd);
                reply = app.dispatch(cmd, req);
            } catch (Throwable t) {
                reply = new LinkedHashMap<>();
                reply.put("ok", false);
                reply.put("error", t.getClass().getName() + ": " + t.getMessage());
            }
            if (seq != null) {
                reply.put("seq", seq);
            }
            synchronized (FilterClients.class) {
                out.println(Json.write(reply));
                out.flush();
            }
            if (exit) {
                app.shutdownAll();
                System.exit(0);
            }
        }
        app.shutdownAll();
        System.exit(0);
    }

    private static Map<String, Object> ok() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", true);
        return m;
    }

    private static String str(Map<String, Object> m, String key, String dflt) {
        Object v = m.get(key);
        return v == null ? dflt : v.toString();
    }

    private static boolean bool(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof Boolean ? (Boolean) v : v != null && Boolean.parseBoolean(v.toString());
    }

    private Map<String, Object> dispatch(String cmd, Map<String, Object> req) throws Exception {
        switch (cmd) {
            case "ping":
                return ok();
            case "start_consumer":
                return startConsumer(req);
            case "stop_consumer": {
                DefaultMQPushConsumer c = consumers.remove(str(req, "id", ""));
                if (c != null) {
                    c.shutdown();
                }
                return ok();
            }
            case "resubscribe": {
                String id = str(req, "id", "");
                DefaultMQPushConsumer c = consumers.get(id);
                if (c == null) {
                    throw new IllegalArgumentException("no consumer " + id);
                }
                subscribe(c, starts.get(id));
                return ok();
            }
            case "produce":
                return produce(req);
            case "received": {
                Map<String, Object> r = ok();
                Map<String, Object> all = new TreeMap<>();
                synchronized (received) {
                    for (Map.Entry<String, List<Map<String, Object>>> e : received.entrySet()) {
                        synchronized (e.getValue()) {
                            all.put(e.getKey(), new ArrayList<>(e.getValue()));
                        }
                    }
                }
                r.put("received", all);
                return r;
            }
            case "shutdown":
                return ok();
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    private static Map<String, Object> record(MessageExt m) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("tag", m.getTags());
        r.put("queue_id", m.getQueueId());
        r.put("offset", m.getQueueOffset());
        r.put("properties", new TreeMap<>(m.getProperties()));
        return r;
    }

    private Map<String, Object> startConsumer(Map<String, Object> req) throws Exception {
        String id = str(req, "id", null);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(str(req, "group", null));
        consumer.setNamesrvAddr(str(req, "namesrv", null));
        consumer.setInstanceName(str(req, "instance_name", "filter_" + id));
        consumer.setClientIP("127.0.0.1");
        consumer.setHeartbeatBrokerInterval(1000);
        consumer.setPollNameServerInterval(1000);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        subscribe(consumer, req);
        List<Map<String, Object>> got = Collections.synchronizedList(new ArrayList<>());
        synchronized (received) {
            received.put(id, got);
        }
        if (bool(req, "orderly")) {
            Set<Integer> suspend = new TreeSet<>();
            Object raw = req.get("suspend_queues");
            if (raw instanceof List) {
                for (Object q : (List<?>) raw) {
                    suspend.add(((Number) q).intValue());
                }
            }
            consumer.setSuspendCurrentQueueTimeMillis(1000);
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                MessageQueue mq = context.getMessageQueue();
                if (suspend.contains(mq.getQueueId()) && !mq.getTopic().startsWith("%RETRY%")) {
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }
                for (MessageExt m : msgs) {
                    got.add(record(m));
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    got.add(record(m));
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        consumer.start();
        consumers.put(id, consumer);
        starts.put(id, req);
        Map<String, Object> r = ok();
        r.put("client_id", consumer.buildMQClientId());
        return r;
    }

    private static void subscribe(DefaultMQPushConsumer consumer, Map<String, Object> req) throws Exception {
        String topic = str(req, "topic", null);
        String expression = str(req, "expression", "*");
        if (bool(req, "sql")) {
            consumer.subscribe(topic, MessageSelector.bySql(expression));
        } else {
            consumer.subscribe(topic, expression);
        }
    }

    private Map<String, Object> produce(Map<String, Object> req) throws Exception {
        if (producer == null) {
            producer = new DefaultMQProducer("filter_clients_producer");
            producer.setNamesrvAddr(str(req, "namesrv", null));
            producer.setInstanceName("filter_producer");
            producer.start();
        }
        String topic = str(req, "topic", null);
        String tag = str(req, "tag", null);
        long count = Long.parseLong(str(req, "count", "1"));
        Object queue = req.get("queue");
        @SuppressWarnings("unchecked")
        Map<String, Object> props = req.get("properties") instanceof Map
            ? (Map<String, Object>) req.get("properties") : Collections.emptyMap();
        List<Object> sent = new ArrayList<>();
        for (int k = 0; k < count; k++) {
            Message msg = new Message(topic, tag, ("m" + k).getBytes(StandardCharsets.UTF_8));
            for (Map.Entry<String, Object> e : props.entrySet()) {
                List<?> values = (List<?>) e.getValue();
                msg.putUserProperty(e.getKey(), String.valueOf(values.get(k % values.size())));
            }
            SendResult result;
            if (queue != null) {
                int qid = ((Number) queue).intValue();
                result = producer.send(msg, (mqs, m, arg) -> {
                    for (MessageQueue mq : mqs) {
                        if (mq.getQueueId() == qid) {
                            return mq;
                        }
                    }
                    return mqs.get(0);
                }, null);
            } else {
                result = producer.send(msg);
            }
            sent.add(result.getMessageQueue().getQueueId());
        }
        Map<String, Object> r = ok();
        r.put("queues", sent);
        return r;
    }

    private void shutdownAll() {
        for (DefaultMQPushConsumer c : consumers.values()) {
            try {
                c.shutdown();
            } catch (Throwable t) {
                System.err.println("shutdown: " + t);
            }
        }
        if (producer != null) {
            producer.shutdown();
        }
    }
}
