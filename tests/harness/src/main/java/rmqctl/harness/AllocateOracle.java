package rmqctl.harness;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Differential-test oracle: runs the real rocketmq-client allocation strategies (and, on 5.x, the
 * broker's {@code QueryAssignmentProcessor.allocate4Pop}) on inputs read as JSON lines from stdin.
 *
 * <p>Input, one object per line:
 * {@code {"id":…, "strategy":"AVG", "vnodes":10, "mqs":[[topic,broker,queueId],…], "cids":[…],
 * "current":"…", "config":[[…]…], "idcs":[…], "broker_pattern":"…", "client_pattern":"…",
 * "pop_share":-1, "sort":true}}. Strategy names are the Java {@code getName()} values, plus {@code POP-<inner>}
 * for the broker's POP assignment.
 *
 * <p>Output, one object per input line: {@code {"id":…, "mq_order":[input index of each queue
 * after Collections.sort], "cids":[cidAll after Collections.sort], "results":[one per sorted cid],
 * "current":…}}. Each result is a list of queues, a queue being its index in the sorted mqAll when it
 * is one of those, else {@code [topic,broker,queueId]}; or {@code {"error":simpleClassName}}.
 * Like RebalanceImpl, both lists are sorted first and {@code allocate} is called once per entry of
 * cidAll (duplicates included). Output is pure ASCII (every other UTF-16 unit escaped) so that
 * unpaired surrogates survive the trip.
 */
public final class AllocateOracle {

    private static final String NEARBY_PREFIX = "MACHINE_ROOM_NEARBY-";
    private static final String POP_PREFIX = "POP-";

    private AllocateOracle() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false, "US-ASCII");
        // Strategies log "[BUG] … not in cidAll"; keep any console logging off our stdout.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            // ASCII out (\\uXXXX escapes) so that lone surrogates come back exactly as they went in
            out.print(Json.writeAscii(runCase(asMap(Json.parse(line)))));
            out.print('\n');
        }
        out.flush();
    }

    /** Interface over the plain strategies and the broker's POP path. */
    private interface Allocator {
        List<MessageQueue> allocate(String currentCid, List<MessageQueue> mqAll, List<String> cidAll)
            throws Exception;
    }

    private static Map<String, Object> runCase(Map<String, Object> c) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("id", c.get("id"));
        List<MessageQueue> input = toQueues(c.get("mqs"));
        List<String> cidAll = new ArrayList<>();
        for (Object o : asList(c.get("cids"))) {
            cidAll.add((String) o);
        }
        List<MessageQueue> mqAll = new ArrayList<>(input);
        // "sort": false feeds the lists as given, to probe the strategy itself on unsorted input.
        if (!Boolean.FALSE.equals(c.get("sort"))) {
            Collections.sort(mqAll);
            Collections.sort(cidAll);
        }

        List<Object> order = new ArrayList<>();
        Map<MessageQueue, Integer> indexOfSorted = new HashMap<>();
        boolean[] taken = new boolean[input.size()];
        for (int i = 0; i < mqAll.size(); i++) {
            MessageQueue mq = mqAll.get(i);
            indexOfSorted.putIfAbsent(mq, i);
            for (int j = 0; j < input.size(); j++) {
                if (!taken[j] && input.get(j) == mq) {
                    taken[j] = true;
                    order.add(j);
                    break;
                }
            }
        }
        result.put("mq_order", order);
        result.put("cids", new ArrayList<Object>(cidAll));

        Allocator allocator;
        try {
            allocator = build((String) c.get("strategy"), c);
        } catch (Throwable t) {
            result.put("error", errorName(t));
            return result;
        }
        List<Object> results = new ArrayList<>();
        for (String cid : cidAll) {
            results.add(call(allocator, cid, mqAll, cidAll, indexOfSorted));
        }
        result.put("results", results);
        if (c.containsKey("current")) {
            result.put("current", call(allocator, (String) c.get("current"), mqAll, cidAll, indexOfSorted));
        }
        return result;
    }

    private static Object call(Allocator allocator, String cid, List<MessageQueue> mqAll, List<String> cidAll,
        Map<MessageQueue, Integer> indexOfSorted) {
        List<MessageQueue> got;
        try {
            got = allocator.allocate(cid, mqAll, cidAll);
        } catch (Throwable t) {
            Map<String, Object> err = new LinkedHashMap<>();
            err.put("error", errorName(t));
            return err;
        }
        if (got == null) {
            return null;
        }
        List<Object> encoded = new ArrayList<>();
        for (MessageQueue mq : got) {
            Integer at = indexOfSorted.get(mq);
            if (at != null) {
                encoded.add(at);
            } else {
                List<Object> triple = new ArrayList<>();
                triple.add(mq.getTopic());
                triple.add(mq.getBrokerName());
                triple.add((long) mq.getQueueId());
                encoded.add(triple);
            }
        }
        return encoded;
    }

    private static String errorName(Throwable t) {
        Throwable cause = t;
        while (cause instanceof InvocationTargetException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }

    private static Allocator build(String name, Map<String, Object> c) throws Exception {
        if (name.startsWith(POP_PREFIX)) {
            return pop(strategy(name.substring(POP_PREFIX.length()), c), intOf(c.get("pop_share"), -1));
        }
        AllocateMessageQueueStrategy s = strategy(name, c);
        return (cid, mqAll, cidAll) -> s.allocate("oracle-group", cid, mqAll, cidAll);
    }

    private static AllocateMessageQueueStrategy strategy(String name, Map<String, Object> c) {
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH":
                return new AllocateMessageQueueConsistentHash(intOf(c.get("vnodes"), 10));
            case "CONFIG": {
                AllocateMessageQueueByConfig s = new AllocateMessageQueueByConfig();
                s.setMessageQueueList(toQueues(c.get("config")));
                return s;
            }
            case "MACHINE_ROOM": {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                Set<String> idcs = new HashSet<>();
                for (Object o : asList(c.get("idcs"))) {
                    idcs.add((String) o);
                }
                s.setConsumeridcs(idcs);
                return s;
            }
            default:
                if (name.startsWith(NEARBY_PREFIX)) {
                    return new AllocateMachineRoomNearby(strategy(name.substring(NEARBY_PREFIX.length()), c),
                        new RegexResolver((String) c.get("broker_pattern"), (String) c.get("client_pattern")));
                }
                throw new IllegalStateException("unknown strategy " + name);
        }
    }

    /**
     * {@code QueryAssignmentProcessor.allocate4Pop} is a public instance method of a broker class
     * whose constructor needs a running BrokerController. The method reads no instance state, so
     * an instance made without running the constructor is enough. Reflection keeps this file
     * compiling against 4.9.x, which has no such class.
     */
    private static Allocator pop(AllocateMessageQueueStrategy inner, int share) throws Exception {
        Class<?> cls = Class.forName("org.apache.rocketmq.broker.processor.QueryAssignmentProcessor");
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Object unsafe = theUnsafe.get(null);
        Object processor = unsafeClass.getMethod("allocateInstance", Class.class).invoke(unsafe, cls);
        Method allocate4Pop = cls.getMethod("allocate4Pop", AllocateMessageQueueStrategy.class, String.class,
            String.class, List.class, List.class, int.class);
        return (cid, mqAll, cidAll) -> {
            @SuppressWarnings("unchecked")
            List<MessageQueue> got = (List<MessageQueue>) allocate4Pop.invoke(processor, inner, "oracle-group", cid,
                mqAll, cidAll, share);
            return got;
        };
    }

    /** Machine room = first capture group of the first match ({@code find}); "" when none. */
    private static final class RegexResolver implements AllocateMachineRoomNearby.MachineRoomResolver {
        private final Pattern broker;
        private final Pattern client;

        RegexResolver(String brokerPattern, String clientPattern) {
            this.broker = Pattern.compile(brokerPattern);
            this.client = Pattern.compile(clientPattern);
        }

        private static String room(Pattern p, String text) {
            Matcher m = p.matcher(text);
            if (!m.find()) {
                return "";
            }
            String g = m.group(1);
            return g == null ? "" : g;
        }

        @Override
        public String brokerDeployIn(MessageQueue messageQueue) {
            return room(broker, messageQueue.getBrokerName());
        }

        @Override
        public String consumerDeployIn(String clientID) {
            return room(client, clientID);
        }
    }

    private static int intOf(Object o, int dflt) {
        return o == null ? dflt : ((Number) o).intValue();
    }

    private static List<MessageQueue> toQueues(Object o) {
        List<MessageQueue> out = new ArrayList<>();
        for (Object item : asList(o)) {
            List<Object> t = asList(item);
            out.add(new MessageQueue((String) t.get(0), (String) t.get(1), ((Number) t.get(2)).intValue()));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object o) {
        return o == null ? new ArrayList<>() : (List<Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }

}
