package io.github.idemtx.ledger.bank;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.UUID;
import javax.xml.stream.XMLOutputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamWriter;

/**
 * Writes the statement bank's account statement as an ISO 20022 camt.053.001.08 document (valid
 * against its schema), escaping done by {@link XMLStreamWriter}.
 *
 * <p>One {@code Stmt} of account {@value #ACCOUNT}: its {@code Id} from the period ({@link
 * #statementId}), {@code FrToDt} the period, an opening ({@code OPBD}) and closing ({@code CLBD})
 * booked balance per currency, and one {@code Ntry} per payment: {@code Amt}/{@code Ccy}, {@code DBIT},
 * status {@code BOOK}, booking and value date (UTC), {@code AcctSvcrRef} the bank's entry id, bank
 * transaction code PMNT/ICDT/DMCT (a credit transfer issued), and in {@code NtryDtls/TxDtls} the
 * entry id again, {@code EndToEndId} the reference when it fits its 35 characters, else {@code
 * NOTPROVIDED} (a reference runs to 140 characters), the destination as {@code RltdPties/Cdtr/Pty/Nm} and the reference as sent in
 * {@code RmtInf/Ustrd}.
 */
final class Camt053Writer {

    /** The namespace of the statements written. */
    static final String NAMESPACE = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08";

    /** The account the statements are of. */
    static final String ACCOUNT = "IDEMTX-SIM-0001";

    private static final DateTimeFormatter COMPACT =
            DateTimeFormatter.ofPattern("yyyyMMddHHmmss").withZone(ZoneOffset.UTC);

    private Camt053Writer() {}

    /** A payment booked in the period. */
    record Booked(
            String id, String reference, BigDecimal amount, String currency, String destination, Instant bookedAt) {}

    /**
     * What the payments in one currency booked before the period's start ({@code opening}) and end
     * ({@code closing}) sum to: the account starts at zero and every payment is a debit.
     */
    record Balance(String currency, BigDecimal opening, BigDecimal closing) {}

    /** The statement of [from, to) created at {@code now}, in UTF-8. */
    static byte[] write(Instant from, Instant to, Instant now, List<Balance> balances, List<Booked> entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            XMLStreamWriter w = XMLOutputFactory.newDefaultFactory().createXMLStreamWriter(out, "UTF-8");
            w.writeStartDocument("UTF-8", "1.0");
            w.setDefaultNamespace(NAMESPACE);
            w.writeStartElement("Document");
            w.writeDefaultNamespace(NAMESPACE);
            w.writeStartElement("BkToCstmrStmt");
            w.writeStartElement("GrpHdr");
            leaf(
                    w,
                    "MsgId",
                    "MSG-" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            leaf(w, "CreDtTm", now.toString());
            w.writeEndElement();
            w.writeStartElement("Stmt");
            leaf(w, "Id", statementId(from, to));
            leaf(w, "CreDtTm", now.toString());
            w.writeStartElement("FrToDt");
            leaf(w, "FrDtTm", from.toString());
            leaf(w, "ToDtTm", to.toString());
            w.writeEndElement();
            w.writeStartElement("Acct");
            w.writeStartElement("Id");
            w.writeStartElement("Othr");
            leaf(w, "Id", ACCOUNT);
            w.writeEndElement();
            w.writeEndElement();
            leaf(w, "Nm", "idemtx bank simulator");
            w.writeEndElement();
            List<Balance> shown = balances.isEmpty() // camt.053 requires a balance
                    ? List.of(new Balance("EUR", BigDecimal.ZERO, BigDecimal.ZERO))
                    : balances;
            for (Balance b : shown) {
                balance(w, "OPBD", b.currency(), b.opening(), from);
            }
            for (Balance b : shown) {
                balance(w, "CLBD", b.currency(), b.closing(), to);
            }
            for (Booked e : entries) {
                entry(w, e);
            }
            w.writeEndElement(); // Stmt
            w.writeEndElement(); // BkToCstmrStmt
            w.writeEndElement(); // Document
            w.writeEndDocument();
            w.close();
        } catch (XMLStreamException e) {
            throw new IllegalStateException("the statement could not be written", e);
        }
        return out.toByteArray();
    }

    private static void balance(XMLStreamWriter w, String type, String currency, BigDecimal debits, Instant at)
            throws XMLStreamException {
        w.writeStartElement("Bal");
        w.writeStartElement("Tp");
        w.writeStartElement("CdOrPrtry");
        leaf(w, "Cd", type);
        w.writeEndElement();
        w.writeEndElement();
        amount(w, debits.setScale(2), currency);
        leaf(w, "CdtDbtInd", debits.signum() > 0 ? "DBIT" : "CRDT");
        w.writeStartElement("Dt");
        leaf(w, "DtTm", at.toString());
        w.writeEndElement();
        w.writeEndElement();
    }

    private static void entry(XMLStreamWriter w, Booked e) throws XMLStreamException {
        String day = e.bookedAt().atOffset(ZoneOffset.UTC).toLocalDate().toString();
        BigDecimal amount = e.amount().setScale(2);
        w.writeStartElement("Ntry");
        amount(w, amount, e.currency());
        leaf(w, "CdtDbtInd", "DBIT");
        w.writeStartElement("Sts");
        leaf(w, "Cd", "BOOK");
        w.writeEndElement();
        w.writeStartElement("BookgDt");
        leaf(w, "Dt", day);
        w.writeEndElement();
        w.writeStartElement("ValDt");
        leaf(w, "Dt", day);
        w.writeEndElement();
        leaf(w, "AcctSvcrRef", e.id());
        w.writeStartElement("BkTxCd");
        w.writeStartElement("Domn");
        leaf(w, "Cd", "PMNT");
        w.writeStartElement("Fmly");
        leaf(w, "Cd", "ICDT");
        leaf(w, "SubFmlyCd", "DMCT");
        w.writeEndElement();
        w.writeEndElement();
        w.writeEndElement();
        w.writeStartElement("NtryDtls");
        w.writeStartElement("TxDtls");
        w.writeStartElement("Refs");
        leaf(w, "AcctSvcrRef", e.id());
        // a reference that fits the 35 characters travels as the end-to-end id too (the ledger's do)
        leaf(w, "EndToEndId", e.reference().length() <= 35 ? e.reference() : "NOTPROVIDED");
        w.writeEndElement();
        amount(w, amount, e.currency());
        leaf(w, "CdtDbtInd", "DBIT");
        w.writeStartElement("RltdPties");
        w.writeStartElement("Cdtr");
        w.writeStartElement("Pty");
        leaf(w, "Nm", e.destination());
        w.writeEndElement();
        w.writeEndElement();
        w.writeEndElement();
        w.writeStartElement("RmtInf");
        leaf(w, "Ustrd", e.reference());
        w.writeEndElement();
        w.writeEndElement(); // TxDtls
        w.writeEndElement(); // NtryDtls
        w.writeEndElement(); // Ntry
    }

    /**
     * The statement's id, the same for the same period: {@code STMT-yyyyMMddHHmmss-yyyyMMddHHmmss}
     * (UTC) for whole seconds, else {@code STMT-} and both instants' epoch nanoseconds in base 36;
     * at most 35 characters either way (camt.053's Max35Text).
     */
    static String statementId(Instant from, Instant to) {
        if (from.getNano() == 0 && to.getNano() == 0) {
            return "STMT-" + COMPACT.format(from) + "-" + COMPACT.format(to);
        }
        return "STMT-" + nanos36(from) + "-" + nanos36(to);
    }

    private static String nanos36(Instant i) {
        return Long.toString(Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000_000L), i.getNano()), 36);
    }

    private static void amount(XMLStreamWriter w, BigDecimal amount, String currency) throws XMLStreamException {
        w.writeStartElement("Amt");
        w.writeAttribute("Ccy", currency);
        w.writeCharacters(amount.toPlainString());
        w.writeEndElement();
    }

    private static void leaf(XMLStreamWriter w, String name, String text) throws XMLStreamException {
        w.writeStartElement(name);
        w.writeCharacters(text);
        w.writeEndElement();
    }
}
