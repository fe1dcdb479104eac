import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HexFormat;
import java.util.Properties;
import java.util.TreeSet;

/** Reads a properties file (UTF-8) with java.util.Properties and prints each key and value, hex of UTF-8, tab-separated. */
public class PropertiesDump {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (Reader reader = new InputStreamReader(Files.newInputStream(Paths.get(args[0])), StandardCharsets.UTF_8)) {
            props.load(reader);
        }
        HexFormat hex = HexFormat.of();
        for (String key : new TreeSet<>(props.stringPropertyNames())) {
            System.out.println(hex.formatHex(key.getBytes(StandardCharsets.UTF_8)) + "\t"
                + hex.formatHex(props.getProperty(key).getBytes(StandardCharsets.UTF_8)));
        }
    }
}
