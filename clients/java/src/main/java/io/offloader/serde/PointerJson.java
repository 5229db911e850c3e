package io.offloader.serde;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * A strict reader of the flat JSON object a pointer is: string and integer
 * members only, each name once. Anything else is a malformed pointer.
 */
final class PointerJson {
    private PointerJson() {
    }

    /** The members of a parsed object: strings or longs by name. */
    static final class Members {
        private final Map<String, Object> values = new HashMap<>();

        String string(String name) {
            Object v = values.get(name);
            if (v == null) {
                throw Pointer.malformed("member \"" + name + "\" is missing");
            }
            if (!(v instanceof String s)) {
                throw Pointer.malformed("member \"" + name + "\" is not a string");
            }
            return s;
        }

        long number(String name) {
            Object v = values.get(name);
            if (v == null) {
                throw Pointer.malformed("member \"" + name + "\" is missing");
            }
            if (!(v instanceof Long n)) {
                throw Pointer.malformed("member \"" + name + "\" is not an integer");
            }
            return n;
        }

        void requireExactly(String... names) {
            Set<String> want = Set.of(names);
            for (String got : values.keySet()) {
                if (!want.contains(got)) {
                    throw Pointer.malformed("unknown member " + quote(Pointer.cut(got)));
                }
            }
        }
    }

    static Members parse(String s) {
        Parser p = new Parser(s);
        Members m = new Members();
        p.space();
        p.expect('{');
        p.space();
        if (p.peek() != '}') {
            while (true) {
                p.space();
                String name = p.string();
                p.space();
                p.expect(':');
                p.space();
                Object value = p.value();
                if (m.values.put(name, value) != null) {
                    throw Pointer.malformed("member " + quote(Pointer.cut(name)) + " appears twice");
                }
                p.space();
                if (p.peek() == ',') {
                    p.pos++;
                    continue;
                }
                break;
            }
        }
        p.expect('}');
        p.space();
        if (p.pos != s.length()) {
            throw Pointer.malformed("data after the JSON object");
        }
        return m;
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x2028 || c == 0x2029) {
                        b.append(String.format("\\u%04x", (int) c)); // as Go's encoding/json writes them
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private static final class Parser {
        private final String s;
        private int pos;

        Parser(String s) {
            this.s = s;
        }

        char peek() {
            if (pos >= s.length()) {
                throw Pointer.malformed("the JSON ends early");
            }
            return s.charAt(pos);
        }

        void expect(char c) {
            if (peek() != c) {
                throw Pointer.malformed("expected '" + c + "' at " + pos);
            }
            pos++;
        }

        void space() {
            while (pos < s.length() && " \t\r\n".indexOf(s.charAt(pos)) >= 0) {
                pos++;
            }
        }

        Object value() {
            char c = peek();
            if (c == '"') {
                return string();
            }
            if (c == '-' || (c >= '0' && c <= '9')) {
                return number();
            }
            throw Pointer.malformed("a member is neither a string nor an integer (null, an object, an array or a boolean) at " + pos);
        }

        long number() {
            int start = pos;
            if (peek() == '-') {
                pos++;
            }
            while (pos < s.length() && Character.isDigit(s.charAt(pos))) {
                pos++;
            }
            String digits = s.substring(start, pos);
            if (pos < s.length() && ".eE".indexOf(s.charAt(pos)) >= 0) {
                throw Pointer.malformed("a number that is not an integer at " + start);
            }
            if (digits.isEmpty() || digits.equals("-") || digits.matches("-?0[0-9]+")) {
                throw Pointer.malformed("a malformed number at " + start);
            }
            try {
                return Long.parseLong(digits);
            } catch (NumberFormatException e) {
                throw Pointer.malformed("a number out of range at " + start);
            }
        }

        String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = peek();
                pos++;
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw Pointer.malformed("a control character in a string");
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = peek();
                pos++;
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        if (pos + 4 > s.length()) {
                            throw Pointer.malformed("a short \\u escape");
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                        } catch (NumberFormatException x) {
                            throw Pointer.malformed("a bad \\u escape");
                        }
                        pos += 4;
                    }
                    default -> throw Pointer.malformed("a bad escape \\" + e);
                }
            }
        }
    }
}
