package rmqctl.harness;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.rocketmq.broker.filter.MessageEvaluationContext;
import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.Expression;
import org.apache.rocketmq.common.filter.ExpressionType;

/**
 * Differential-test oracle for SQL92 message filters: compiles each expression with the broker's
 * own filter factory and evaluates it over a property map in the broker's evaluation context.
 *
 * <p>Input, one case per line: tab-separated Base64 (UTF-8) fields, the expression first, then
 * property name and value pairs. Output, one word per line: {@code parse} (the broker refuses the
 * expression), {@code true}, {@code false}, {@code null} (unknown) or {@code error} (the evaluation
 * threw); anything else is {@code other:<class>}.
 */
public final class Sql92Oracle {

    private Sql92Oracle() {
    }

    private static String text(String b64) {
        return new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintStream out = new PrintStream(System.out, false, "US-ASCII");
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            Map<String, String> props = new HashMap<>();
            for (int i = 1; i + 1 < fields.length; i += 2) {
                props.put(text(fields[i]), text(fields[i + 1]));
            }
            Expression expression;
            try {
                expression = FilterFactory.INSTANCE.get(ExpressionType.SQL92).compile(text(fields[0]));
            } catch (Throwable t) {
                out.println("parse");
                continue;
            }
            Object result;
            try {
                result = expression.evaluate(new MessageEvaluationContext(props));
            } catch (Throwable t) {
                out.println("error");
                continue;
            }
            if (result == null) {
                out.println("null");
            } else if (result instanceof Boolean) {
                out.println(((Boolean) result) ? "true" : "false");
            } else {
                out.println("other:" + result.getClass().getSimpleName());
            }
        }
        out.flush();
    }
}
