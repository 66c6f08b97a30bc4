package io.github.idemtx.keys.internal;

import com.ibm.icu.lang.UCharacter;
import com.ibm.icu.text.Normalizer2;

/**
 * The only class that refers to ICU4J; loaded by {@link CaseFold} only once it knows ICU4J is
 * there, so that the rest of the library runs without it.
 */
final class CaseFoldIcu {

    private CaseFoldIcu() {}

    static String nfc(String s) {
        return Normalizer2.getNFCInstance().normalize(s);
    }

    static String fold(String s) {
        return UCharacter.foldCase(s, UCharacter.FOLD_CASE_DEFAULT);
    }
}
