package io.github.idemtx.spring.docs.payments;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Runs docs/spring-boot.md's payments example ({@link PaymentController}, {@link PaymentService}) on
 * Spring Boot's own auto-configuration plus the starter's, without JPA, as the page's reader would.
 */
@SpringBootApplication(
        excludeName = {
            "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
            "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration"
        })
public class DocsPaymentsApplication {}
