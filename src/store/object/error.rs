//! The object store's errors made readable: one line, no XML.

/// The longest error text kept, in characters.
const MAX_ERROR_CHARS: usize = 400;

/// An error of the store as one line: an XML error body (S3, Azure, GCS's
/// XML API) reduced to its `Code` and `Message`, every run of whitespace
/// (line breaks) one space, at most [`MAX_ERROR_CHARS`]; so that it reads
/// as one line at start and in the logs.
pub(super) fn one_line(text: &str) -> String {
    let between = |open: &str, close: &str| {
        let start = text.find(open)? + open.len();
        let len = text[start..].find(close)?;
        Some(text[start..start + len].trim().to_owned())
    };
    let body = text.find("<?xml").or_else(|| text.find("<Error"));
    let reduced = match body {
        Some(at) => {
            let head = text[..at].trim_end().trim_end_matches(':');
            let parts: Vec<String> = [
                between("<Code>", "</Code>"),
                between("<Message>", "</Message>"),
            ]
            .into_iter()
            .flatten()
            .collect();
            format!("{head}: {}", parts.join(": "))
        }
        None => text.to_owned(),
    };
    let mut line = reduced.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((cut, _)) = line.char_indices().nth(MAX_ERROR_CHARS) {
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn xml_bodies_become_their_code_and_message_on_one_line() {
        let s3 = "Generic S3 error: Error performing GET http://h/b?list-type=2 in 5ms - \
                  Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
                  <Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>\
                  <BucketName>b</BucketName><RequestId>r</RequestId></Error>";
        let line = one_line(s3);
        assert!(!line.contains('\n') && !line.contains('<'), "{line}");
        assert!(
            line.ends_with("404 Not Found: NoSuchBucket: The specified bucket does not exist"),
            "{line}"
        );
        let azure = "Error: 403 Forbidden\n<?xml version=\"1.0\"?>\n<Error>\n  <Code>AuthenticationFailed</Code>\n  \
                     <Message>Server failed to authenticate the request.\nRequestId:x\nTime:y</Message>\n</Error>";
        let line = one_line(azure);
        assert_eq!(
            line,
            "Error: 403 Forbidden: AuthenticationFailed: Server failed to authenticate the request. RequestId:x Time:y"
        );
        let plain = "connection refused\n  (os error 111)";
        assert_eq!(one_line(plain), "connection refused (os error 111)");
        let long = "x".repeat(1000);
        assert_eq!(one_line(&long).chars().count(), 401);
    }
}
