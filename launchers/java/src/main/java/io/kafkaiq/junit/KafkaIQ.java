package io.kafkaiq.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a {@code kafkaiq serve} process on free ports: on a test class, one for the whole class (started before
 * all its tests, stopped after them, also when they fail); on a test method, one for that method. Declare a
 * {@link KafkaIQCluster} parameter (constructor, lifecycle or test method) to reach it.
 *
 * <pre>
 * &#64;KafkaIQ(brokers = 3, overrides = {"min.insync.replicas=2"})
 * class FailoverTest {
 *     &#64;Test
 *     void leaderDies(KafkaIQCluster kafka) { ... kafka.kill(1, 0); ... }
 * }
 * </pre>
 */
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(KafkaIQExtension.class)
public @interface KafkaIQ {
    /** How many brokers the process runs (serve --brokers N); broker 0 hosts the controller. */
    int brokers() default 1;

    /** Broker settings as "key=value", each passed as --override. */
    String[] overrides() default {};

    /**
     * The kafkaiq binary; when empty, the system property kafkaiq.bin, else $KAFKAIQ_BIN, else kafkaiq on PATH.
     */
    String binary() default "";
}
