//! Follows `NextToken` until the last page. Kept apart from the SDK so it can be tested with a
//! fake page source: the emulator ignores `MaxResults` and always answers with one page.

use std::collections::HashSet;
use std::future::Future;

use crate::catalog::boundary::SchemaError;
use crate::catalog::CatalogError;

/// More pages than this is a runaway token loop, not a catalog.
pub(crate) const MAX_PAGES: usize = 10_000;

/// Collects every page. An empty-string token ends the listing like an absent one; a token
/// that comes back a second time is an error (the service would loop forever).
pub(crate) async fn collect_pages<T, F, Fut>(
    what: &str,
    mut fetch: F,
) -> Result<Vec<T>, CatalogError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), CatalogError>>,
{
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let (page, next) = fetch(token.take()).await?;
        items.extend(page);
        match next.filter(|t| !t.is_empty()) {
            None => return Ok(items),
            Some(t) => {
                if !seen.insert(t.clone()) {
                    return Err(CatalogError::UpstreamSchema(SchemaError::Invalid {
                        what: what.to_string(),
                        problem: format!(
                            "NextToken '{t}' was returned twice; the listing would never end"
                        ),
                    }));
                }
                token = Some(t);
            }
        }
    }
    Err(CatalogError::UpstreamSchema(SchemaError::Invalid {
        what: what.to_string(),
        problem: format!("more than {MAX_PAGES} pages"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A fake page source: token → (items, next token); records the tokens it was asked for.
    struct Pages {
        pages: HashMap<Option<String>, (Vec<u32>, Option<String>)>,
        asked: RefCell<Vec<Option<String>>>,
    }

    impl Pages {
        fn new(pages: &[(Option<&str>, &[u32], Option<&str>)]) -> Pages {
            Pages {
                pages: pages
                    .iter()
                    .map(|(t, items, next)| {
                        (
                            t.map(str::to_string),
                            (items.to_vec(), next.map(str::to_string)),
                        )
                    })
                    .collect(),
                asked: RefCell::new(vec![]),
            }
        }

        async fn fetch(
            &self,
            token: Option<String>,
        ) -> Result<(Vec<u32>, Option<String>), CatalogError> {
            self.asked.borrow_mut().push(token.clone());
            Ok(self.pages[&token].clone())
        }
    }

    fn run<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn follows_next_token_through_every_page_in_order() {
        let pages = Pages::new(&[
            (None, &[1, 2], Some("a")),
            (Some("a"), &[3], Some("b")),
            (Some("b"), &[4, 5], None),
        ]);
        let items = run(collect_pages("t", |t| pages.fetch(t))).unwrap();
        assert_eq!(items, vec![1, 2, 3, 4, 5]);
        assert_eq!(
            *pages.asked.borrow(),
            vec![None, Some("a".to_string()), Some("b".to_string())]
        );
    }

    #[test]
    fn an_empty_token_ends_the_listing() {
        let pages = Pages::new(&[(None, &[1], Some(""))]);
        assert_eq!(
            run(collect_pages("t", |t| pages.fetch(t))).unwrap(),
            vec![1]
        );
    }

    #[test]
    fn an_empty_page_with_a_token_is_followed_not_taken_as_the_end() {
        let pages = Pages::new(&[(None, &[], Some("a")), (Some("a"), &[7], None)]);
        assert_eq!(
            run(collect_pages("t", |t| pages.fetch(t))).unwrap(),
            vec![7]
        );
    }

    #[test]
    fn a_repeated_token_is_an_error_not_an_endless_loop() {
        let pages = Pages::new(&[(None, &[1], Some("a")), (Some("a"), &[2], Some("a"))]);
        let err = run(collect_pages("GetTables of x", |t| pages.fetch(t))).unwrap_err();
        assert_eq!(
            err,
            CatalogError::UpstreamSchema(SchemaError::Invalid {
                what: "GetTables of x".into(),
                problem: "NextToken 'a' was returned twice; the listing would never end".into(),
            })
        );
    }

    #[test]
    fn an_error_on_a_later_page_fails_the_whole_listing() {
        let calls = RefCell::new(0);
        let result = run(collect_pages("t", |_t| {
            *calls.borrow_mut() += 1;
            let n = *calls.borrow();
            async move {
                if n == 1 {
                    Ok((vec![1], Some("a".to_string())))
                } else {
                    Err(CatalogError::Io {
                        thing: "page 2".into(),
                        problem: "down".into(),
                        next: "retry".into(),
                    })
                }
            }
        }));
        assert_eq!(result.unwrap_err().kind(), "SourceUnavailable");
    }
}
