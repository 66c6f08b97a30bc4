package io.github.idemtx.ledger;

import java.util.LinkedHashMap;
import java.util.Map;

/** The {@code --name=value} flags of the ledger's programs (the ledger, the bank, storm), parsed once. */
public final class Flags {

    private Flags() {}

    /**
     * The flags by name, in order.
     *
     * @param what how the refusal names them, e.g. "arguments" or "storm arguments"
     * @throws IllegalArgumentException naming an argument that is not {@code --name=value}
     */
    public static Map<String, String> parse(String what, String[] args) {
        Map<String, String> flags = new LinkedHashMap<>();
        for (String arg : args) {
            if (!arg.startsWith("--") || !arg.contains("=")) {
                throw new IllegalArgumentException(what + " are --name=value, got '" + arg + "'");
            }
            flags.put(arg.substring(2, arg.indexOf('=')), arg.substring(arg.indexOf('=') + 1));
        }
        return flags;
    }

    /** The whole number {@code --name} gives, {@code fallback} without it; refused, naming it, outside min..max. */
    public static int intFlag(Map<String, String> flags, String name, int fallback, int min, int max) {
        String v = flags.get(name);
        if (v == null) {
            return fallback;
        }
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a whole number, was '" + v + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("--" + name + " must be between " + min + " and " + max + ", was " + n);
        }
        return n;
    }

    /** The whole number {@code --name} gives (any long), {@code fallback} without it; refused, naming it, when not one. */
    public static long longFlag(Map<String, String> flags, String name, long fallback) {
        String v = flags.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a whole number, was '" + v + "'");
        }
    }

    /** The number {@code --name} gives, {@code fallback} without it; refused, naming it, outside min..max. */
    public static double doubleFlag(Map<String, String> flags, String name, double fallback, double min, double max) {
        String v = flags.get(name);
        if (v == null) {
            return fallback;
        }
        double n;
        try {
            n = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a number, was '" + v + "'");
        }
        if (!(n >= min && n <= max)) {
            throw new IllegalArgumentException("--" + name + " must be between " + min + " and " + max + ", was " + n);
        }
        return n;
    }
}
