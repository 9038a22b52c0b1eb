//! Tee: every observer sees every call, in order.

use heir_viz::{ChromeTrace, SvgGantt, SvgOptions, Tee};

use crate::support::*;

#[test]
fn every_observer_sees_the_same_calls_in_order() {
    let mut a = Recorder::default();
    let mut b = Recorder::default();
    {
        let mut tee = Tee::new().with(&mut a).with(&mut b);
        assert_eq!(tee.len(), 2);
        play(&mut tee, &info(), &classic_pi(), 8 * MS);
    }
    let mut expected = vec![Call::Start(info())];
    expected.extend(classic_pi().into_iter().map(Call::Event));
    expected.push(Call::Finish(8 * MS));
    assert_eq!(a.calls, expected);
    assert_eq!(b.calls, expected);
}

#[test]
fn a_tee_feeds_both_writers_like_direct_use() {
    let mut trace = ChromeTrace::new(Vec::new());
    let mut svg = SvgGantt::new(SvgOptions::default());
    {
        let mut tee = Tee::new();
        assert!(tee.is_empty());
        tee.push(&mut trace);
        tee.push(&mut svg);
        play(&mut tee, &info(), &classic_pi(), 8 * MS);
    }
    let mut direct_trace = ChromeTrace::new(Vec::new());
    let mut direct_svg = SvgGantt::new(SvgOptions::default());
    play(&mut direct_trace, &info(), &classic_pi(), 8 * MS);
    play(&mut direct_svg, &info(), &classic_pi(), 8 * MS);
    assert_eq!(
        trace.into_inner().unwrap(),
        direct_trace.into_inner().unwrap()
    );
    assert_eq!(svg.render(), direct_svg.render());
}
