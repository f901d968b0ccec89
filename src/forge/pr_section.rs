//! Replan's one section of a pull / merge request body ("Verification", issue 37): kept between
//! two hidden markers so that every later run replaces it in place, and nothing else of the body
//! is ever rewritten. The only body write a forge offers is [`splice`]d through here.

/// Opens the section.
pub const START: &str = "<!-- replan:verification -->";
/// Closes it.
pub const END: &str = "<!-- replan:verification:end -->";

/// Whether `section` holds one of the markers: such a text could close the section early and
/// leave a tail outside it that no later run replaces.
pub fn holds_marker(section: &str) -> bool {
    section.contains(START) || section.contains(END)
}

/// `body` with its marked section replaced by `section` (appended below the body when there is
/// none yet); everything outside the markers stays byte for byte. Markers inside `section` are
/// removed first, so the result always holds exactly one section.
pub fn splice(body: &str, section: &str) -> String {
    let section = section.replace(START, "").replace(END, "");
    let block = format!("{START}\n{}\n{END}", section.trim());
    match body.find(START) {
        Some(start) => {
            let end = body[start..]
                .find(END)
                .map_or(body.len(), |e| start + e + END.len());
            format!("{}{block}{}", &body[..start], &body[end..])
        }
        None if body.trim().is_empty() => block,
        None => format!("{}\n\n{block}\n", body.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_appended_once_then_replaced_in_place() {
        let first = splice("Adds hello.md.\n\nCloses #7\n", "### Verification\n- one");
        assert!(
            first.starts_with("Adds hello.md.\n\nCloses #7\n\n"),
            "{first}"
        );
        let second = splice(&first, "### Verification\n- two");
        assert_eq!(second.matches(START).count(), 1, "{second}");
        assert!(
            second.contains("- two") && !second.contains("- one"),
            "{second}"
        );
        assert_eq!(second, first.replace("- one", "- two"));
    }

    #[test]
    fn text_after_the_section_stays_and_markers_in_the_section_are_dropped() {
        let body = format!("above\n{START}\nold\n{END}\nbelow a person wrote");
        let hostile = format!("new\n{END}\nreplaced body\n{START}");
        let out = splice(&body, &hostile);
        assert!(out.starts_with("above\n"), "{out}");
        assert!(
            out.ends_with(&format!("{END}\nbelow a person wrote")),
            "{out}"
        );
        assert_eq!(out.matches(END).count(), 1, "{out}");
        assert_eq!(out.matches(START).count(), 1, "{out}");
        assert!(holds_marker(&hostile) && !holds_marker("plain"));
    }
}
