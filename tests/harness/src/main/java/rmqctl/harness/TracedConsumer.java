package rmqctl.harness;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One push consumer with message tracing on (its consume records go to RMQ_SYS_TRACE_TOPIC).
 *
 * <p>Arguments: name server, group, topic, tag expression, instance name. Prints {@code STARTED}
 * once subscribed, then {@code RECEIVED <unique key>} for every message its listener returns
 * success for; shuts down when its standard input closes.
 */
public final class TracedConsumer {
    private TracedConsumer() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: TracedConsumer NAMESRV GROUP TOPIC EXPRESSION INSTANCE");
            System.exit(2);
        }
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1], true, null);  // tracing on, default trace topic
        consumer.setNamesrvAddr(args[0]);
        consumer.setInstanceName(args[4]);
        consumer.setClientIP("127.0.0.1");
        consumer.setHeartbeatBrokerInterval(1000);
        consumer.setPollNameServerInterval(1000);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(args[2], args[3]);
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                synchronized (System.out) {
                    for (MessageExt m : msgs) {
                        System.out.println("RECEIVED " + m.getMsgId());
                    }
                    System.out.flush();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        consumer.start();
        synchronized (System.out) {
            System.out.println("STARTED");
            System.out.flush();
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // keep running until the test closes our standard input
        }
        consumer.shutdown();
    }
}
