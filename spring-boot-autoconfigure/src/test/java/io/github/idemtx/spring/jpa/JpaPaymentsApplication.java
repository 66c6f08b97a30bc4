package io.github.idemtx.spring.jpa;

import io.github.idemtx.spring.sample.PaymentsApplication;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments application whose transactions are JPA's: Spring Boot's Hibernate and Spring Data JPA
 * auto-configuration ({@code JpaTransactionManager}), its jOOQ over the same DataSource (through
 * {@code TransactionAwareDataSourceProxy}), and idemtx's starter. The sample's tables.
 */
@SpringBootApplication
public class JpaPaymentsApplication {

    /** The sample's database properties, plus what keeps JPA to the schema Flyway made. */
    public static Map<String, Object> databaseProperties() {
        Map<String, Object> properties = new HashMap<>(PaymentsApplication.databaseProperties());
        properties.put("spring.jpa.hibernate.ddl-auto", "none");
        properties.put("spring.jpa.open-in-view", "false");
        return properties;
    }
}
