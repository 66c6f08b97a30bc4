package io.github.idemtx.jooq.internal.tx;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads a SQL string just far enough to tell whether it ends the transaction: whether it, or any
 * statement of a multi-statement string, starts with COMMIT, END, ROLLBACK (not ROLLBACK TO, nor
 * ROLLBACK PREPARED), ABORT or PREPARE TRANSACTION. Statements are split at top-level semicolons
 * only: those inside quotes, {@code E'...'} escape strings, dollar quotes and comments (line
 * comments, nested block comments) do not split. Everything else (BEGIN, SAVEPOINT, SET
 * TRANSACTION, ...) passes. A string without {@code ;} (all of jOOQ's) is one statement: only its
 * first word is read, and only when its first letter may begin one of those verbs.
 */
public final class TransactionSql {

    private TransactionSql() {}

    /**
     * The transaction-ending command some statement of {@code sql} starts with (lower case, e.g.
     * "commit"), or null. Semicolons inside quotes, dollar quotes and comments do not split.
     */
    public static @Nullable String endingVerb(@Nullable String sql) {
        if (sql == null) {
            return null;
        }
        if (sql.indexOf(';') < 0) {
            return verbAt(sql, skipBlank(sql, 0)); // one statement (the usual case): its first word alone
        }
        int n = sql.length();
        int i = 0;
        while (i < n) {
            i = skipBlank(sql, i);
            String verb = verbAt(sql, i);
            if (verb != null) {
                return verb;
            }
            i = nextStatement(sql, i);
        }
        return null;
    }

    private static @Nullable String verbAt(String sql, int i) {
        if (i >= sql.length()) {
            return null;
        }
        switch (Character.toLowerCase(sql.charAt(i))) {
            case 'c', 'e', 'a', 'r', 'p' -> {} // commit, end, abort, rollback, prepare
            default -> {
                return null; // select, insert, update, with, ...: no word to cut out and compare
            }
        }
        String word = word(sql, i);
        return switch (word) {
            case "commit", "end", "abort" -> word;
            case "rollback" -> {
                int j = skipBlank(sql, i + word.length());
                String next = word(sql, j);
                if (next.equals("work") || next.equals("transaction")) {
                    j = skipBlank(sql, j + next.length());
                    next = word(sql, j);
                }
                if (next.equals("to")) {
                    yield null; // ROLLBACK TO SAVEPOINT: the work's own savepoint
                }
                if (next.equals("prepared")) {
                    yield null; // fails inside a transaction block anyway
                }
                yield word;
            }
            case "prepare" -> {
                int j = skipBlank(sql, i + word.length());
                yield word(sql, j).equals("transaction") ? "prepare transaction" : null;
            }
            default -> null;
        };
    }

    private static String word(String sql, int i) {
        int j = i;
        while (j < sql.length() && Character.isLetter(sql.charAt(j))) {
            j++;
        }
        return sql.substring(i, j).toLowerCase(Locale.ROOT);
    }

    /** Skips white space and comments from {@code i}. */
    private static int skipBlank(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (Character.isWhitespace(c) || c == '(') {
                i++;
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                i = endOfLineComment(sql, i);
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                i = endOfBlockComment(sql, i);
            } else {
                return i;
            }
        }
        return i;
    }

    /** The index past a {@code --} comment at {@code i}: the server ends it at a line feed or a carriage return. */
    private static int endOfLineComment(String sql, int i) {
        int n = sql.length();
        while (i < n && sql.charAt(i) != '\n' && sql.charAt(i) != '\r') {
            i++;
        }
        return i;
    }

    /** The index past the closing quote of an {@code E'...'} string whose body starts at {@code i}. */
    private static int endOfEscapeString(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (c == '\\') {
                i += 2;
            } else if (c == '\'') {
                if (i + 1 < n && sql.charAt(i + 1) == '\'') {
                    i += 2; // a doubled quote inside
                } else {
                    return i + 1;
                }
            } else {
                i++;
            }
        }
        return n;
    }

    private static boolean isIdentifierPart(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '$';
    }

    private static int endOfBlockComment(String sql, int i) {
        int depth = 0;
        int n = sql.length();
        while (i < n) {
            if (sql.startsWith("/*", i)) {
                depth++;
                i += 2;
            } else if (sql.startsWith("*/", i)) {
                depth--;
                i += 2;
                if (depth == 0) {
                    return i;
                }
            } else {
                i++;
            }
        }
        return n;
    }

    /** The index just past the next top-level semicolon from {@code i}, or the end. */
    private static int nextStatement(String sql, int i) {
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (c == ';') {
                return i + 1;
            } else if (c == '\''
                    && i > 0
                    && (sql.charAt(i - 1) == 'E' || sql.charAt(i - 1) == 'e')
                    && (i < 2 || !isIdentifierPart(sql.charAt(i - 2)))) {
                i = endOfEscapeString(sql, i + 1); // E'...': a backslash escapes the next character
            } else if (c == '\'' || c == '"') {
                int close = sql.indexOf(c, i + 1);
                i = close < 0 ? n : close + 1; // a doubled quote closes and reopens: the same
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                i = endOfLineComment(sql, i);
            } else if (c == '$' && i > 0 && isIdentifierPart(sql.charAt(i - 1))) {
                i++; // inside an identifier (a$b), not a dollar quote
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                i = endOfBlockComment(sql, i);
            } else if (c == '$') {
                int tagEnd = i + 1;
                while (tagEnd < n && (Character.isLetterOrDigit(sql.charAt(tagEnd)) || sql.charAt(tagEnd) == '_')) {
                    tagEnd++;
                }
                if (tagEnd < n
                        && sql.charAt(tagEnd) == '$'
                        && (tagEnd == i + 1 || !Character.isDigit(sql.charAt(i + 1)))) {
                    String tag = sql.substring(i, tagEnd + 1);
                    int close = sql.indexOf(tag, tagEnd + 1);
                    i = close < 0 ? n : close + tag.length();
                } else {
                    i = tagEnd; // a parameter such as $1
                }
            } else {
                i++;
            }
        }
        return n;
    }
}
