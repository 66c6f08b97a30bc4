package io.github.idemtx.http.internal;

/** Measures how deeply a JSON text nests, without parsing it, so a recursive parser can be spared. */
public final class JsonDepth {

    private JsonDepth() {}

    /** The deepest nesting of arrays and objects outside strings; tolerant of invalid JSON. */
    public static int of(CharSequence json) {
        int depth = 0;
        int max = 0;
        boolean inString = false;
        for (int i = 0; i < json.length(); i++) {
            char c = json.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '[' || c == '{') {
                max = Math.max(max, ++depth);
            } else if (c == ']' || c == '}') {
                depth--;
            }
        }
        return max;
    }
}
