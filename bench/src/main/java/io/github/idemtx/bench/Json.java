package io.github.idemtx.bench;

import java.util.Collection;
import java.util.Iterator;
import java.util.Map;

/** Writes maps, lists, strings, numbers, booleans and null as indented JSON. */
final class Json {

    private Json() {}

    static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String s) {
            string(sb, s);
        } else if (v instanceof Double d) {
            sb.append(d.isNaN() || d.isInfinite() ? "null" : number(d));
        } else if (v instanceof Float f) {
            write(sb, f.doubleValue(), indent);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                sb.append("{}");
                return;
            }
            sb.append("{\n");
            Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                pad(sb, indent + 1);
                string(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue(), indent + 1);
                sb.append(it.hasNext() ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append('}');
        } else if (v instanceof Collection<?> list) {
            if (list.isEmpty()) {
                sb.append("[]");
                return;
            }
            boolean flat = list.stream()
                    .allMatch(x -> x == null || x instanceof Number || x instanceof String || x instanceof Boolean);
            if (flat) {
                sb.append('[');
                Iterator<?> it = list.iterator();
                while (it.hasNext()) {
                    write(sb, it.next(), indent);
                    if (it.hasNext()) {
                        sb.append(", ");
                    }
                }
                sb.append(']');
                return;
            }
            sb.append("[\n");
            Iterator<?> it = list.iterator();
            while (it.hasNext()) {
                pad(sb, indent + 1);
                write(sb, it.next(), indent + 1);
                sb.append(it.hasNext() ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append(']');
        } else {
            string(sb, v.toString());
        }
    }

    private static String number(double d) {
        if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString((long) d);
        }
        return String.format(java.util.Locale.ROOT, "%.6g", d)
                .replaceAll("(\\.\\d*?)0+(e|$)", "$1$2")
                .replace(".e", "e")
                .replaceAll("\\.$", "");
    }

    private static void pad(StringBuilder sb, int indent) {
        sb.append("  ".repeat(indent));
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
