package io.github.idemtx.keys.internal;

/**
 * Unicode normalisation form C and full case folding, from ICU4J, which is an optional
 * dependency: {@link #available()} says whether it is on the class path, and the other methods
 * fail with a message naming the dependency when it is not.
 *
 * <p>{@link #fold} is full case folding (the C and F mappings of CaseFolding.txt, without the
 * Turkic T mappings), the same as Python's {@code str.casefold()}: "Straße" becomes "strasse",
 * "İ" becomes "i" followed by U+0307, and both sigmas become "σ". {@link #nfc} and
 * {@link #fold} use the same ICU data, so one Unicode version governs both. Both are stable for
 * characters assigned in the Unicode version of the other side (Python 3.11 uses Unicode 14);
 * only characters assigned later can be treated differently.
 */
public final class CaseFold {

    /** The Maven coordinates a user adds to get case folding. */
    public static final String ICU4J = "com.ibm.icu:icu4j";

    private static final boolean AVAILABLE = detect();

    private CaseFold() {}

    /** Whether ICU4J can be loaded by the class loader that loaded this class. */
    public static boolean available() {
        return AVAILABLE;
    }

    /**
     * Fails unless ICU4J is {@linkplain #available() available}.
     *
     * @param what what needs it, for the message (for example "field 'memo': FREE_TEXT")
     * @throws IllegalStateException naming the dependency to add
     */
    public static void requireAvailable(String what) {
        if (!AVAILABLE) {
            throw new IllegalStateException(
                    what + " needs ICU4J for Unicode case folding, and it is not on the class path:"
                            + " add the dependency " + ICU4J);
        }
    }

    /** {@code s} in Unicode normalisation form C. */
    public static String nfc(String s) {
        requireAvailable("Unicode normalisation");
        return CaseFoldIcu.nfc(s);
    }

    /** {@code s} with full Unicode case folding, as Python's {@code str.casefold()}. */
    public static String fold(String s) {
        requireAvailable("Case folding");
        return CaseFoldIcu.fold(s);
    }

    private static boolean detect() {
        try {
            Class.forName("com.ibm.icu.lang.UCharacter", false, CaseFold.class.getClassLoader());
            Class.forName("com.ibm.icu.text.Normalizer2", false, CaseFold.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
