package io.github.idemtx.ledger.bank;

import java.io.InputStream;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.regex.Pattern;
import javax.xml.XMLConstants;
import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamConstants;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;

/**
 * Reads an ISO 20022 camt.053 account statement (BankToCustomerStatement, versions 001.02 to
 * 001.08): the statement's id and period, and its entries with what a reconciler matches payments
 * on.
 *
 * <p>Elements are matched by local name in the document's namespace (any prefix); elements of other
 * namespaces (supplementary data) are skipped whole. What is read, below {@code
 * Document/BkToCstmrStmt/Stmt}:
 *
 * <ul>
 *   <li>{@code Id}; {@code FrToDt/FrDtTm} and {@code FrToDt/ToDtTm}, date-times with an offset (the
 *       period as the bank states it: this simulator's is half-open, [from, to), some banks state an
 *       inclusive end such as 23:59:59);
 *   <li>per {@code Ntry}: {@code AcctSvcrRef} (the bank's unique entry id), {@code Amt} and its
 *       {@code Ccy}, {@code CdtDbtInd} ({@code DBIT} or {@code CRDT}: credits are returned too, for the
 *       caller to ignore or flag), {@code Sts} ({@code BOOK} only, as {@code Sts} text in 001.02 or
 *       {@code Sts/Cd} later), {@code BookgDt/Dt}, or {@code BookgDt/DtTm} whose local date is taken;
 *   <li>the reference, from {@code NtryDtls/TxDtls/RmtInf/Ustrd} (several lines joined without a
 *       separator), else from {@code NtryDtls/TxDtls/Refs/EndToEndId} unless that is {@code
 *       NOTPROVIDED}, else null. An entry with several {@code TxDtls} (a batch booking) gives one
 *       {@link Entry} per transaction, each with its {@code TxDtls/Amt}, else {@code
 *       TxDtls/AmtDtls/TxAmt/Amt} (one is required then), and the id
 *       {@code <AcctSvcrRef>/<n>} (n from 1, in document order).
 * </ul>
 *
 * <p>The document is read with StAX, DTDs and external entities off: a document with a {@code
 * DOCTYPE} is refused before anything in it is resolved (no XXE, no entity expansion). Anything
 * missing or malformed is an {@link IllegalArgumentException} naming it.
 */
public final class Camt053 {

    /** The namespaces read: camt.053.001.02 to camt.053.001.08. */
    static final Pattern NAMESPACES = Pattern.compile("urn:iso:std:iso:20022:tech:xsd:camt\\.053\\.001\\.0[2-8]");

    private static final String STMT = "Document/BkToCstmrStmt/Stmt";
    private static final String NTRY = STMT + "/Ntry";
    private static final String TX = NTRY + "/NtryDtls/TxDtls";

    private Camt053() {}

    /**
     * An account statement: the bank's id for it, the period it states, its entries in document
     * order.
     */
    public record Statement(String id, Instant from, Instant to, List<Entry> entries) {

        /** Keeps an unmodifiable copy of the entries. */
        public Statement {
            entries = List.copyOf(entries);
        }
    }

    /**
     * One booked entry (or one transaction of a batch entry).
     *
     * @param entryId the bank's unique id of the entry ({@code AcctSvcrRef})
     * @param reference the payer's reference ({@code Ustrd}, else {@code EndToEndId}); null when
     *     the entry carries none
     * @param amount the amount, never negative (its direction is {@code creditDebit})
     * @param currency the amount's currency ({@code Ccy})
     * @param bookingDate the day the bank booked it
     * @param creditDebit {@code DBIT} (money left the account) or {@code CRDT}
     */
    public record Entry(
            String entryId,
            String reference,
            BigDecimal amount,
            String currency,
            LocalDate bookingDate,
            String creditDebit) {}

    /**
     * Reads a document holding exactly one statement.
     *
     * @throws IllegalArgumentException naming what is wrong: not well-formed, a DOCTYPE, not
     *     camt.053.001.02 to .08, no or several {@code Stmt}, a statement without {@code Id} or
     *     {@code FrToDt}, an entry without {@code Amt}, {@code Ccy}, {@code AcctSvcrRef}, {@code
     *     CdtDbtInd}, booked status or {@code BookgDt}
     */
    public static Statement parse(InputStream in) {
        List<Statement> all = parseAll(in);
        if (all.size() != 1) {
            throw new IllegalArgumentException(
                    "the document holds " + all.size() + " statements (Stmt); parse reads one, parseAll several");
        }
        return all.get(0);
    }

    /**
     * Reads a document holding one or more statements (one per account, as some banks send), in
     * document order; refused as {@link #parse} says.
     */
    public static List<Statement> parseAll(InputStream in) {
        XMLInputFactory factory = XMLInputFactory.newDefaultFactory();
        factory.setProperty(XMLInputFactory.SUPPORT_DTD, false);
        factory.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
        factory.setProperty(XMLInputFactory.IS_NAMESPACE_AWARE, true);
        factory.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
        try {
            XMLStreamReader r = factory.createXMLStreamReader(in);
            try {
                return read(r);
            } finally {
                r.close();
            }
        } catch (XMLStreamException e) {
            throw new IllegalArgumentException("not a well-formed XML document: " + e.getMessage(), e);
        }
    }

    private static List<Statement> read(XMLStreamReader r) throws XMLStreamException {
        List<Statement> out = new ArrayList<>();
        Deque<String> path = new ArrayDeque<>();
        StringBuilder text = new StringBuilder();
        String namespace = null;
        boolean statements = false;
        StatementReader stmt = null;
        EntryReader ntry = null;
        Tx tx = null;
        while (r.hasNext()) {
            int event = r.next();
            if (event == XMLStreamConstants.DTD) {
                throw new IllegalArgumentException(
                        "the document has a DOCTYPE: refused (a camt.053 document has none; DTDs and entities are not read)");
            } else if (event == XMLStreamConstants.START_ELEMENT) {
                if (namespace == null) {
                    namespace = root(r);
                } else if (!namespace.equals(r.getNamespaceURI())) {
                    skip(r);
                    continue;
                }
                path.addLast(r.getLocalName());
                text.setLength(0);
                String p = String.join("/", path);
                switch (p) {
                    case "Document/BkToCstmrStmt" -> statements = true;
                    case STMT -> stmt = new StatementReader(out.size() + 1);
                    case NTRY -> ntry = new EntryReader(++stmt.ntries);
                    case TX -> tx = new Tx();
                    case NTRY + "/Amt" -> ntry.currency = r.getAttributeValue(null, "Ccy");
                    case TX + "/Amt" -> tx.currency = r.getAttributeValue(null, "Ccy");
                    case TX + "/AmtDtls/TxAmt/Amt" -> tx.txAmtCurrency = r.getAttributeValue(null, "Ccy");
                    default -> {}
                }
            } else if (event == XMLStreamConstants.CHARACTERS
                    || event == XMLStreamConstants.CDATA
                    || event == XMLStreamConstants.SPACE) {
                text.append(r.getText());
            } else if (event == XMLStreamConstants.END_ELEMENT) {
                String p = String.join("/", path);
                String v = text.toString();
                text.setLength(0);
                path.removeLast();
                switch (p) {
                    case STMT + "/Id" -> stmt.id = v.strip();
                    case STMT + "/FrToDt" -> stmt.period = true;
                    case STMT + "/FrToDt/FrDtTm" -> stmt.from = dateTime(v, "FrDtTm");
                    case STMT + "/FrToDt/ToDtTm" -> stmt.to = dateTime(v, "ToDtTm");
                    case NTRY + "/Amt" -> ntry.amount = decimal(v, ntry.name());
                    case NTRY + "/CdtDbtInd" -> ntry.creditDebit = v.strip();
                    case NTRY + "/Sts", NTRY + "/Sts/Cd", NTRY + "/Sts/Prtry" -> {
                        if (ntry.status == null && !v.isBlank()) {
                            ntry.status = v.strip();
                        }
                    }
                    case NTRY + "/BookgDt/Dt" -> ntry.bookingDate = date(v, ntry.name());
                    case NTRY + "/BookgDt/DtTm" -> ntry.bookingDate = date(v, ntry.name());
                    case NTRY + "/AcctSvcrRef" -> ntry.entryId = v.strip();
                    case TX + "/Amt" -> tx.amount = decimal(v, ntry.name() + "'s TxDtls");
                    case TX + "/AmtDtls/TxAmt/Amt" -> tx.txAmt = decimal(v, ntry.name() + "'s TxDtls");
                    case TX + "/CdtDbtInd" -> tx.creditDebit = v.strip();
                    case TX + "/Refs/EndToEndId" -> tx.endToEndId = v.strip();
                    case TX + "/RmtInf/Ustrd" -> tx.unstructured.append(v);
                    case TX -> ntry.transactions.add(tx);
                    case NTRY -> ntry.entries(stmt.entries);
                    case STMT -> out.add(stmt.statement());
                    default -> {}
                }
            }
        }
        if (namespace == null) {
            throw new IllegalArgumentException("the document is empty: a camt.053 Document is expected");
        }
        if (!statements) {
            throw new IllegalArgumentException("the document has no BkToCstmrStmt: not a camt.053 statement");
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("the document holds no Stmt: a statement is required");
        }
        return out;
    }

    /** Checks the root element; its namespace. */
    private static String root(XMLStreamReader r) {
        String ns = r.getNamespaceURI();
        if (!r.getLocalName().equals("Document")
                || ns == null
                || !NAMESPACES.matcher(ns).matches()) {
            throw new IllegalArgumentException("the root element is {" + (ns == null ? "" : ns) + "}" + r.getLocalName()
                    + ": a Document in namespace urn:iso:std:iso:20022:tech:xsd:camt.053.001.02 to .08 is expected");
        }
        return ns;
    }

    /** Skips the element just started, with everything in it. */
    private static void skip(XMLStreamReader r) throws XMLStreamException {
        for (int depth = 1; depth > 0; ) {
            int event = r.next();
            if (event == XMLStreamConstants.START_ELEMENT) {
                depth++;
            } else if (event == XMLStreamConstants.END_ELEMENT) {
                depth--;
            }
        }
    }

    private static Instant dateTime(String v, String element) {
        try {
            return OffsetDateTime.parse(v.strip(), DateTimeFormatter.ISO_OFFSET_DATE_TIME)
                    .toInstant();
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(element + " must be a date-time with an offset, such as"
                    + " 2024-05-01T00:00:00+02:00 or 2024-05-01T00:00:00Z; was '" + v.strip() + "'");
        }
    }

    private static LocalDate date(String v, String where) {
        try {
            return LocalDate.from(DateTimeFormatter.ISO_DATE_TIME.parseBest(
                    v.strip(), OffsetDateTime::from, java.time.LocalDateTime::from, LocalDate::from));
        } catch (DateTimeParseException e) {
            try {
                return LocalDate.parse(v.strip(), DateTimeFormatter.ISO_DATE);
            } catch (DateTimeParseException again) {
                throw new IllegalArgumentException(
                        where + " has a BookgDt that is neither a date nor a date-time: '" + v.strip() + "'");
            }
        }
    }

    private static BigDecimal decimal(String v, String where) {
        try {
            return new BigDecimal(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(where + " has an Amt that is not a decimal: '" + v.strip() + "'");
        }
    }

    /** A statement being read. */
    private static final class StatementReader {
        final int number;
        String id;
        boolean period;
        int ntries;
        Instant from;
        Instant to;
        final List<Entry> entries = new ArrayList<>();

        StatementReader(int number) {
            this.number = number;
        }

        Statement statement() {
            String name = "Stmt " + number + (id == null ? "" : " (Id " + id + ")");
            if (id == null || id.isEmpty()) {
                throw new IllegalArgumentException(name + " has no Id");
            }
            if (!period) {
                throw new IllegalArgumentException(name + " has no FrToDt: the period it covers is required");
            }
            if (from == null || to == null) {
                throw new IllegalArgumentException(name + "'s FrToDt lacks " + (from == null ? "FrDtTm" : "ToDtTm"));
            }
            if (to.isBefore(from)) {
                throw new IllegalArgumentException(
                        name + "'s FrToDt ends (" + to + ") before it starts (" + from + ")");
            }
            return new Statement(id, from, to, entries);
        }
    }

    /** An entry being read. */
    private static final class EntryReader {
        final int number;
        String entryId;
        BigDecimal amount;
        String currency;
        String creditDebit;
        String status;
        LocalDate bookingDate;
        final List<Tx> transactions = new ArrayList<>();

        EntryReader(int number) {
            this.number = number;
        }

        String name() {
            return "Ntry " + number + (entryId == null ? "" : " (AcctSvcrRef " + entryId + ")");
        }

        void entries(List<Entry> into) {
            if (amount == null) {
                throw new IllegalArgumentException(name() + " has no Amt");
            }
            if (currency == null || currency.isBlank()) {
                throw new IllegalArgumentException(name() + "'s Amt has no Ccy");
            }
            if (entryId == null || entryId.isEmpty()) {
                throw new IllegalArgumentException(name() + " has no AcctSvcrRef: the bank's entry id is required");
            }
            if (!"DBIT".equals(creditDebit) && !"CRDT".equals(creditDebit)) {
                throw new IllegalArgumentException(
                        name() + " has CdtDbtInd '" + creditDebit + "': DBIT or CRDT is required");
            }
            if (!"BOOK".equals(status)) {
                throw new IllegalArgumentException(
                        name() + " has status '" + status + "': a statement reports booked (BOOK) entries only");
            }
            if (bookingDate == null) {
                throw new IllegalArgumentException(name() + " has no BookgDt");
            }
            if (transactions.size() <= 1) {
                Tx only = transactions.isEmpty() ? null : transactions.get(0);
                into.add(new Entry(
                        entryId, only == null ? null : only.reference(), amount, currency, bookingDate, creditDebit));
                return;
            }
            for (int i = 0; i < transactions.size(); i++) {
                Tx t = transactions.get(i);
                if (t.amount == null) { // 001.02 has no TxDtls/Amt, only AmtDtls/TxAmt/Amt
                    t.amount = t.txAmt;
                    t.currency = t.txAmtCurrency;
                }
                if (t.amount == null || t.currency == null || t.currency.isBlank()) {
                    throw new IllegalArgumentException(name() + " is a batch of " + transactions.size()
                            + " transactions; its TxDtls " + (i + 1) + " has no Amt with a Ccy");
                }
                String direction = t.creditDebit == null ? creditDebit : t.creditDebit;
                into.add(new Entry(
                        entryId + "/" + (i + 1), t.reference(), t.amount, t.currency, bookingDate, direction));
            }
        }
    }

    /** A transaction of an entry being read. */
    private static final class Tx {
        BigDecimal amount;
        String currency;
        BigDecimal txAmt;
        String txAmtCurrency;
        String creditDebit;
        String endToEndId;
        final StringBuilder unstructured = new StringBuilder();

        String reference() {
            if (!unstructured.isEmpty()) {
                return unstructured.toString();
            }
            return endToEndId == null || endToEndId.isEmpty() || endToEndId.equals("NOTPROVIDED") ? null : endToEndId;
        }
    }
}
