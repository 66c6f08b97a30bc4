package io.github.idemtx.ledger.bank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Reading camt.053 statements: the bank's own, a real bank's shape, and documents to refuse. */
class Camt053Test {

    static final String V08 = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08";

    /** A camt.053.001.02 statement as a bank sends it: booked date-times, EndToEndIds, a credit, a batch. */
    static final String V02_SAMPLE = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"
                      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
              <BkToCstmrStmt>
                <GrpHdr><MsgId>053D2024050200001</MsgId><CreDtTm>2024-05-02T06:00:00+02:00</CreDtTm></GrpHdr>
                <Stmt>
                  <Id>0352C5320240501</Id>
                  <ElctrncSeqNb>121</ElctrncSeqNb>
                  <CreDtTm>2024-05-02T06:00:00+02:00</CreDtTm>
                  <FrToDt>
                    <FrDtTm>2024-05-01T00:00:00+02:00</FrDtTm>
                    <ToDtTm>2024-05-01T23:59:59.999+02:00</ToDtTm>
                  </FrToDt>
                  <Acct><Id><IBAN>DE89370400440532013000</IBAN></Id><Ccy>EUR</Ccy></Acct>
                  <Bal>
                    <Tp><CdOrPrtry><Cd>PRCD</Cd></CdOrPrtry></Tp>
                    <Amt Ccy="EUR">1000.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2024-04-30</Dt></Dt>
                  </Bal>
                  <Ntry>
                    <Amt Ccy="EUR">125.50</Amt>
                    <CdtDbtInd>DBIT</CdtDbtInd>
                    <Sts>BOOK</Sts>
                    <BookgDt><DtTm>2024-05-02T00:30:00+02:00</DtTm></BookgDt>
                    <ValDt><Dt>2024-05-02</Dt></ValDt>
                    <AcctSvcrRef>2024050100001</AcctSvcrRef>
                    <BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>ICDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>
                    <NtryDtls><TxDtls>
                      <Refs><MsgId>PAIN-7</MsgId><EndToEndId>INV-2024-0042</EndToEndId></Refs>
                      <AmtDtls><TxAmt><Amt Ccy="EUR">125.50</Amt></TxAmt></AmtDtls>
                      <RltdPties><Cdtr><Nm>ACME GmbH</Nm></Cdtr></RltdPties>
                    </TxDtls></NtryDtls>
                  </Ntry>
                  <Ntry>
                    <Amt Ccy="EUR">40</Amt>
                    <CdtDbtInd>CRDT</CdtDbtInd>
                    <Sts>BOOK</Sts>
                    <BookgDt><Dt>2024-05-01</Dt></BookgDt>
                    <AcctSvcrRef>2024050100002</AcctSvcrRef>
                    <BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>
                    <NtryDtls><TxDtls>
                      <Refs><EndToEndId>E2E-IGNORED</EndToEndId></Refs>
                      <RmtInf><Ustrd>refund of order 7</Ustrd></RmtInf>
                    </TxDtls></NtryDtls>
                  </Ntry>
                  <Ntry>
                    <Amt Ccy="EUR">9.99</Amt>
                    <CdtDbtInd>DBIT</CdtDbtInd>
                    <Sts>BOOK</Sts>
                    <BookgDt><Dt>2024-05-01</Dt></BookgDt>
                    <AcctSvcrRef>2024050100003</AcctSvcrRef>
                    <BkTxCd><Prtry><Cd>FEE</Cd></Prtry></BkTxCd>
                    <NtryDtls><TxDtls><Refs><EndToEndId>NOTPROVIDED</EndToEndId></Refs></TxDtls></NtryDtls>
                  </Ntry>
                  <Ntry>
                    <Amt Ccy="EUR">30.00</Amt>
                    <CdtDbtInd>DBIT</CdtDbtInd>
                    <Sts>BOOK</Sts>
                    <BookgDt><Dt>2024-05-01</Dt></BookgDt>
                    <AcctSvcrRef>2024050100004</AcctSvcrRef>
                    <BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>ICDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>
                    <NtryDtls>
                      <Btch><NbOfTxs>2</NbOfTxs></Btch>
                      <TxDtls>
                        <Refs><EndToEndId>NOTPROVIDED</EndToEndId></Refs>
                        <AmtDtls><TxAmt><Amt Ccy="EUR">10.00</Amt></TxAmt></AmtDtls>
                        <RmtInf><Ustrd>payout:first half, </Ustrd><Ustrd>second half</Ustrd></RmtInf>
                      </TxDtls>
                      <TxDtls>
                        <Refs><EndToEndId>SALARY-5</EndToEndId></Refs>
                        <AmtDtls><TxAmt><Amt Ccy="EUR">20.00</Amt></TxAmt></AmtDtls>
                      </TxDtls>
                    </NtryDtls>
                  </Ntry>
                </Stmt>
              </BkToCstmrStmt>
            </Document>
            """;

    static Camt053.Statement parse(String xml) {
        return Camt053.parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
    }

    /** A camt.053.001.08 document with one statement holding {@code stmt}. */
    static String document(String stmt) {
        return "<Document xmlns=\"" + V08 + "\"><BkToCstmrStmt><GrpHdr><MsgId>M</MsgId>"
                + "<CreDtTm>2024-05-02T00:00:00Z</CreDtTm></GrpHdr>" + stmt + "</BkToCstmrStmt></Document>";
    }

    static final String PERIOD = "<Id>S1</Id><FrToDt><FrDtTm>2024-05-01T00:00:00Z</FrDtTm>"
            + "<ToDtTm>2024-05-02T00:00:00Z</ToDtTm></FrToDt><Acct><Id><Othr><Id>A</Id></Othr></Id></Acct>";

    /** An entry; {@code amount}, {@code ref} and {@code status} are put in as they are. */
    static String entry(String amount, String ref, String status) {
        return "<Ntry>" + amount + "<CdtDbtInd>DBIT</CdtDbtInd>" + status
                + "<BookgDt><Dt>2024-05-01</Dt></BookgDt>" + ref
                + "<BkTxCd/><NtryDtls><TxDtls><RmtInf><Ustrd>r</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>";
    }

    static final String AMOUNT = "<Amt Ccy=\"EUR\">1.00</Amt>";
    static final String REF = "<AcctSvcrRef>E1</AcctSvcrRef>";
    static final String BOOKED = "<Sts><Cd>BOOK</Cd></Sts>";

    @Test
    void aRealBanksVersion02StatementIsRead() {
        Camt053.Statement s = parse(V02_SAMPLE);
        assertThat(s.id()).isEqualTo("0352C5320240501");
        assertThat(s.from()).isEqualTo(Instant.parse("2024-04-30T22:00:00Z"));
        assertThat(s.to()).isEqualTo(Instant.parse("2024-05-01T21:59:59.999Z"));
        assertThat(s.entries())
                .containsExactly(
                        new Camt053.Entry(
                                "2024050100001",
                                "INV-2024-0042",
                                new BigDecimal("125.50"),
                                "EUR",
                                LocalDate.parse("2024-05-02"),
                                "DBIT"),
                        new Camt053.Entry(
                                "2024050100002",
                                "refund of order 7",
                                new BigDecimal("40"),
                                "EUR",
                                LocalDate.parse("2024-05-01"),
                                "CRDT"),
                        new Camt053.Entry(
                                "2024050100003",
                                null,
                                new BigDecimal("9.99"),
                                "EUR",
                                LocalDate.parse("2024-05-01"),
                                "DBIT"),
                        new Camt053.Entry(
                                "2024050100004/1",
                                "payout:first half, second half",
                                new BigDecimal("10.00"),
                                "EUR",
                                LocalDate.parse("2024-05-01"),
                                "DBIT"),
                        new Camt053.Entry(
                                "2024050100004/2",
                                "SALARY-5",
                                new BigDecimal("20.00"),
                                "EUR",
                                LocalDate.parse("2024-05-01"),
                                "DBIT"));
    }

    @Test
    void theBanksOwnStatementReadsBackAsWritten() {
        Instant from = Instant.parse("2024-05-01T00:00:00Z");
        Instant to = Instant.parse("2024-05-02T00:00:00Z");
        List<Camt053Writer.Booked> booked = List.of(
                new Camt053Writer.Booked(
                        "E00000000000000000001",
                        "a <tag> & \"quotes\" ]]> 😀",
                        new BigDecimal("10.5"),
                        "EUR",
                        "Ana & Co <x>",
                        Instant.parse("2024-05-01T23:59:59.999999Z")),
                new Camt053Writer.Booked(
                        "E00000000000000000002",
                        "r".repeat(140),
                        new BigDecimal("0.01"),
                        "BRL",
                        "BR12",
                        Instant.parse("2024-05-01T00:00:00Z")));
        byte[] xml = Camt053Writer.write(
                from,
                to,
                to.plusSeconds(5),
                List.of(new Camt053Writer.Balance("EUR", BigDecimal.ONE, new BigDecimal("11.5"))),
                booked);
        Camt053.Statement s = Camt053.parse(new ByteArrayInputStream(xml));
        assertThat(s.id()).isEqualTo("STMT-20240501000000-20240502000000");
        assertThat(s.from()).isEqualTo(from);
        assertThat(s.to()).isEqualTo(to);
        assertThat(s.entries())
                .containsExactly(
                        new Camt053.Entry(
                                "E00000000000000000001",
                                "a <tag> & \"quotes\" ]]> 😀",
                                new BigDecimal("10.50"),
                                "EUR",
                                LocalDate.parse("2024-05-01"),
                                "DBIT"),
                        new Camt053.Entry(
                                "E00000000000000000002",
                                "r".repeat(140),
                                new BigDecimal("0.01"),
                                "BRL",
                                LocalDate.parse("2024-05-01"),
                                "DBIT"));
    }

    @Test
    void aStatementIdIsTheSameForTheSamePeriodAndFitsMax35Text() {
        Instant from = Instant.parse("2024-05-01T00:00:00.000000001Z");
        Instant to = Instant.parse("2262-04-11T23:47:16.854775807Z"); // the longest epoch nanoseconds in a long
        assertThat(Camt053Writer.statementId(from, to))
                .isEqualTo(Camt053Writer.statementId(from, to))
                .isNotEqualTo(Camt053Writer.statementId(from.plusNanos(1), to))
                .hasSizeLessThanOrEqualTo(35);
        assertThat(Camt053Writer.statementId(
                        Instant.parse("9999-12-31T23:59:58Z"), Instant.parse("9999-12-31T23:59:59Z")))
                .hasSizeLessThanOrEqualTo(35);
    }

    @Test
    void prefixesAndForeignElementsAreReadByNamespace() {
        String xml = "<c:Document xmlns:c=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.04\"><c:BkToCstmrStmt>"
                + "<c:Stmt><c:Id>S</c:Id><c:FrToDt><c:FrDtTm>2024-05-01T00:00:00Z</c:FrDtTm>"
                + "<c:ToDtTm>2024-05-02T00:00:00Z</c:ToDtTm></c:FrToDt>"
                + "<x:Ntry xmlns:x=\"urn:example:other\"><x:Amt>99</x:Amt></x:Ntry>"
                + "<c:Ntry><c:Amt Ccy=\"CHF\">2.00</c:Amt><c:CdtDbtInd>DBIT</c:CdtDbtInd><c:Sts><c:Cd>BOOK</c:Cd></c:Sts>"
                + "<c:BookgDt><c:Dt>2024-05-01</c:Dt></c:BookgDt><c:AcctSvcrRef>R</c:AcctSvcrRef>"
                + "<c:NtryDtls><c:TxDtls><c:RmtInf><c:Ustrd>ref</c:Ustrd></c:RmtInf></c:TxDtls></c:NtryDtls>"
                + "</c:Ntry></c:Stmt></c:BkToCstmrStmt></c:Document>";
        assertThat(parse(xml).entries())
                .containsExactly(new Camt053.Entry(
                        "R", "ref", new BigDecimal("2.00"), "CHF", LocalDate.parse("2024-05-01"), "DBIT"));
    }

    @Test
    void anExternalEntityIsRefusedUnread() throws Exception {
        AtomicInteger fetched = new AtomicInteger();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            fetched.incrementAndGet();
            byte[] dtd = "<!ENTITY leak \"leaked\">".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, dtd.length);
            exchange.getResponseBody().write(dtd);
            exchange.close();
        });
        server.start();
        try {
            String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/evil";
            String body = document("<Stmt>" + PERIOD + "<Ntry><Amt Ccy=\"EUR\">1</Amt><AcctSvcrRef>&xxe;</AcctSvcrRef>"
                    + "</Ntry></Stmt>");
            for (String doctype : List.of(
                    "<!DOCTYPE Document [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>",
                    "<!DOCTYPE Document [<!ENTITY xxe SYSTEM \"" + url + "\">]>",
                    "<!DOCTYPE Document SYSTEM \"" + url + ".dtd\">",
                    "<!DOCTYPE Document [<!ENTITY % remote SYSTEM \"" + url + ".pe\"> %remote;]>",
                    "<!DOCTYPE Document [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
                            + "<!ENTITY xxe \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>")) {
                assertThatThrownBy(() -> parse("<?xml version=\"1.0\"?>" + doctype + body))
                        .as(doctype)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("DOCTYPE");
            }
        } finally {
            server.stop(0);
        }
        assertThat(fetched).as("requests for the external entities").hasValue(0);
    }

    @Test
    void aMalformedDocumentIsRefusedNamingWhatIsWrong() {
        String ok = document("<Stmt>" + PERIOD + entry(AMOUNT, REF, BOOKED) + "</Stmt>");
        assertThat(parse(ok).entries()).hasSize(1);
        String[][] cases = {
            {"not xml", "not a well-formed XML document"},
            {"", "not a well-formed XML document"},
            {ok.replace(V08, "urn:iso:std:iso:20022:tech:xsd:camt.052.001.08"), "camt.053.001.02 to .08 is expected"},
            {ok.replace(" xmlns=\"" + V08 + "\"", ""), "camt.053.001.02 to .08 is expected"},
            {document(""), "the document holds no Stmt"},
            {"<Document xmlns=\"" + V08 + "\"/>", "no BkToCstmrStmt"},
            {
                document("<Stmt>" + PERIOD.replaceAll("<FrToDt>.*</FrToDt>", "") + "</Stmt>"),
                "Stmt 1 (Id S1) has no FrToDt"
            },
            {document("<Stmt>" + PERIOD.replace("<Id>S1</Id>", "") + "</Stmt>"), "Stmt 1 has no Id"},
            {
                document("<Stmt>" + PERIOD.replace("2024-05-01T00:00:00Z", "2024-05-01T00:00:00") + "</Stmt>"),
                "FrDtTm must be a date-time with an offset"
            },
            {document("<Stmt>" + PERIOD + entry("", REF, BOOKED) + "</Stmt>"), "Ntry 1 (AcctSvcrRef E1) has no Amt"},
            {document("<Stmt>" + PERIOD + entry("<Amt>1.00</Amt>", REF, BOOKED) + "</Stmt>"), "Amt has no Ccy"},
            {
                document("<Stmt>" + PERIOD + entry("<Amt Ccy=\"EUR\">one</Amt>", REF, BOOKED) + "</Stmt>"),
                "has an Amt that is not a decimal: 'one'"
            },
            {
                document("<Stmt>" + PERIOD + entry(AMOUNT, REF, BOOKED) + entry(AMOUNT, "", BOOKED) + "</Stmt>"),
                "Ntry 2 has no AcctSvcrRef"
            },
            {
                document("<Stmt>" + PERIOD + entry(AMOUNT, REF, "<Sts><Cd>PDNG</Cd></Sts>") + "</Stmt>"),
                "has status 'PDNG': a statement reports booked (BOOK) entries only"
            },
            {document("<Stmt>" + PERIOD + "</Stmt><Stmt>" + PERIOD + "</Stmt>"), "the document holds 2 statements"},
        };
        for (String[] c : cases) {
            assertThatThrownBy(() -> parse(c[0]))
                    .as(c[0])
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(c[1]);
        }
        assertThat(Camt053.parseAll(
                        new ByteArrayInputStream(document("<Stmt>" + PERIOD + "</Stmt><Stmt>" + PERIOD + "</Stmt>")
                                .getBytes(StandardCharsets.UTF_8))))
                .hasSize(2);
    }
}
