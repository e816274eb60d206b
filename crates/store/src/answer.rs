//! A script's numeric answer as a type: each code a variant, named as the script's header
//! names it, so a caller matches on what the script did instead of comparing integers.
//!
//! [`coded_answer!`](crate::coded_answer) declares the enum and reads it from the reply; a
//! code the enum does not name is refused as a reply of the wrong shape, naming the script, so
//! a script that grows a code fails its first test until the enum names it too.

/// Declare a script's numeric answer: `coded_answer! { /// docs  pub enum Released("window_release.lua") { /// docs  Done = 1, NotOurs = 0 } }`.
#[macro_export]
macro_rules! coded_answer {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident($script:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// The script whose answer this is.
            #[allow(dead_code)]
            $vis const SCRIPT: &'static str = $script;

            /// The code the script answers for this outcome.
            #[allow(dead_code)]
            $vis fn code(self) -> i64 {
                match self {
                    $( Self::$variant => $code ),+
                }
            }
        }

        impl ::redis::FromRedisValue for $name {
            fn from_redis_value(v: ::redis::Value) -> ::std::result::Result<Self, ::redis::ParsingError> {
                match v {
                    $( ::redis::Value::Int($code) => Ok(Self::$variant), )+
                    other => Err(format!(
                        "{}: an answer it does not give: {other:?}",
                        $script
                    )
                    .into()),
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use redis::{FromRedisValue, Value};

    crate::coded_answer! {
        /// A test answer.
        enum Kept("kept.lua") {
            /// Kept.
            Kept = 1,
            /// Not ours.
            NotOurs = 0,
        }
    }

    #[test]
    fn each_code_reads_as_its_variant_and_any_other_names_the_script() {
        assert_eq!(Kept::from_redis_value(Value::Int(1)).unwrap(), Kept::Kept);
        assert_eq!(
            Kept::from_redis_value(Value::Int(0)).unwrap(),
            Kept::NotOurs
        );
        assert_eq!(Kept::NotOurs.code(), 0);
        for other in [Value::Int(2), Value::Nil, Value::Okay] {
            let e = Kept::from_redis_value(other).unwrap_err().to_string();
            assert!(e.contains("kept.lua"), "{e}");
        }
    }
}
